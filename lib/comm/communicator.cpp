#include "lib/comm/communicator.h"

#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>

namespace dbs::comm {

std::string Communicator::host() const {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

namespace {

// Rank 0 of 1: every collective leaves the data as it is.
class SingleCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void allreduce_sum(std::span<float>) override {}
  void allreduce_sum(std::span<double>) override {}
  void allgather_bytes(const void* in, std::size_t bytes, void* out) override {
    if (bytes > 0 && in != out) std::memmove(out, in, bytes);
  }
  void broadcast_bytes(void*, std::size_t, int) override {}
  void barrier() override {}
  void abort(int code) noexcept override { std::_Exit(code); }
};

}  // namespace

std::unique_ptr<Communicator> make_single() {
  return std::make_unique<SingleCommunicator>();
}

}  // namespace dbs::comm
