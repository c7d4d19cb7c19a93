#include "agents/threads.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "lib/common/log.h"
#include "lib/nn/threads.h"

namespace dbs::agent {
namespace {

// Every rank's host and thread count.
struct Seat {
  char host[64];
  int threads;
};

std::vector<Seat> gather(comm::Communicator& comm, int threads) {
  Seat mine{};
  std::strncpy(mine.host, comm.host().c_str(), sizeof mine.host - 1);
  mine.threads = threads;
  std::vector<Seat> all(static_cast<std::size_t>(comm.size()));
  comm.allgather_bytes(&mine, sizeof mine, all.data());
  return all;
}

int host_cores() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

}  // namespace

ThreadChoice choose_threads(comm::Communicator& comm, const Options& o) {
  const std::vector<Seat> all = gather(comm, 0);
  if (o.train.threads > 0) return {o.train.threads, o.threads_from};
  if (!o.threads_from.empty()) return {nn::available_threads(), "--threads 0: all cores of the rank"};
  const int cores = host_cores(), mine = nn::available_threads();
  if (mine < cores) return {mine, "the " + std::to_string(mine) + " core(s) the rank is bound to"};
  const auto& me = all[static_cast<std::size_t>(comm.rank())];
  const int local = static_cast<int>(std::count_if(all.begin(), all.end(), [&](const Seat& s) {
    return std::strcmp(s.host, me.host) == 0;
  }));
  return {std::max(1, cores / local),
          std::to_string(cores) + " core(s) / " + std::to_string(local) + " rank(s) on the host"};
}

void warn_oversubscription(comm::Communicator& comm, int threads) {
  const std::vector<Seat> all = gather(comm, threads);
  const int rank = comm.rank();
  const Seat& me = all[static_cast<std::size_t>(rank)];
  int local = 0, total = 0, first = -1;
  for (int r = 0; r < static_cast<int>(all.size()); ++r) {
    if (std::strcmp(all[static_cast<std::size_t>(r)].host, me.host) != 0) continue;
    if (first < 0) first = r;
    ++local;
    total += all[static_cast<std::size_t>(r)].threads;
  }
  const int cores = host_cores();
  if (rank != first || total <= cores) return;
  log::warn("host " + std::string(me.host) + " is oversubscribed: " + std::to_string(local) +
            " rank(s) run " + std::to_string(total) + " TBB threads on " + std::to_string(cores) +
            " core(s); every step waits for the slowest thread (use --threads " +
            std::to_string(std::max(1, cores / local)) + " or fewer)");
}

}  // namespace dbs::agent
