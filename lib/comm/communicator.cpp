#include "lib/comm/communicator.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "lib/common/error.h"

namespace dbs::comm {

std::string Communicator::host() const {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

namespace {

// What host_share gathers from every rank.
struct Seat {
  char host[64];
  int threads;
  int has_mask;
  cpu_set_t mask;
};

}  // namespace

std::vector<std::string> gather_strings(Communicator& comm, const std::string& text) {
  constexpr std::size_t kLen = 128;
  char mine[kLen] = {};
  std::strncpy(mine, text.c_str(), kLen - 1);
  std::vector<char> all(kLen * static_cast<std::size_t>(comm.size()));
  comm.allgather_bytes(mine, kLen, all.data());
  std::vector<std::string> out;
  for (int r = 0; r < comm.size(); ++r) out.emplace_back(all.data() + r * kLen);
  return out;
}

HostShare host_share(Communicator& comm, int threads) {
  Seat mine{};
  std::strncpy(mine.host, comm.host().c_str(), sizeof mine.host - 1);
  mine.threads = threads;
  CPU_ZERO(&mine.mask);
  mine.has_mask = sched_getaffinity(0, sizeof mine.mask, &mine.mask) == 0 ? 1 : 0;
  std::vector<Seat> all(static_cast<std::size_t>(comm.size()));
  comm.allgather_bytes(&mine, sizeof mine, all.data());
  HostShare share{0, 0, 0, comm.rank()};
  cpu_set_t cores;
  CPU_ZERO(&cores);
  bool masks = true;
  for (int r = static_cast<int>(all.size()) - 1; r >= 0; --r) {
    const Seat& s = all[static_cast<std::size_t>(r)];
    if (std::strcmp(s.host, mine.host) != 0) continue;
    share.first = r;
    ++share.ranks;
    share.threads += s.threads;
    masks = masks && s.has_mask != 0;
    CPU_OR(&cores, &cores, &s.mask);
  }
  share.cores = masks ? CPU_COUNT(&cores) : 0;
  if (share.cores <= 0) share.cores = static_cast<int>(std::thread::hardware_concurrency());
  share.cores = std::max(1, share.cores);
  return share;
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
