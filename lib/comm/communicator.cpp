#include "lib/comm/communicator.h"

#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>

#include "lib/common/error.h"

namespace dbs::comm {

std::string Communicator::host() const {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

void check_segments(std::size_t length, std::span<const std::size_t> counts, int world) {
  if (counts.size() != static_cast<std::size_t>(world))
    throw CheckError("segments: " + std::to_string(counts.size()) + " counts for " +
                     std::to_string(world) + " ranks");
  const std::size_t total = std::accumulate(counts.begin(), counts.end(), std::size_t{0});
  if (total != length)
    throw CheckError("segments: counts sum to " + std::to_string(total) + ", the buffer has " +
                     std::to_string(length));
}

namespace {

// Rank 0 of 1: every collective leaves the data as it is.
class SingleCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void allreduce_sum(std::span<float>) override {}
  void allreduce_sum(std::span<double>) override {}
  void reduce_scatter_sum(std::span<float> data, std::span<const std::size_t> counts) override {
    check_segments(data.size(), counts, 1);
  }
  void allgather_segments(std::span<float> data, std::span<const std::size_t> counts) override {
    check_segments(data.size(), counts, 1);
  }
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
