#include "agents/threads.h"

#include <algorithm>
#include <thread>

#include "lib/common/log.h"
#include "lib/nn/threads.h"

namespace dbs::agent {
namespace {

int host_cores() {
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

}  // namespace

ThreadChoice choose_threads(comm::Communicator& comm, const Options& o) {
  const comm::HostShare share = comm::host_share(comm, 0);
  if (o.train.threads > 0) return {o.train.threads, o.threads_from};
  if (!o.threads_from.empty())
    return {nn::available_threads(), "--threads 0: all cores of the rank"};
  const int cores = host_cores(), mine = nn::available_threads();
  if (mine < cores) return {mine, "the " + std::to_string(mine) + " core(s) the rank is bound to"};
  const int local = share.ranks;
  if (o.node_cpus > 0)
    return {std::max(1, o.node_cpus / local), "SLURM_CPUS_ON_NODE: " + std::to_string(o.node_cpus) +
                                                  " CPU(s) / " + std::to_string(local) +
                                                  " rank(s) on the node"};
  return {std::max(1, cores / local),
          std::to_string(cores) + " core(s) / " + std::to_string(local) + " rank(s) on the host"};
}

void warn_oversubscription(comm::Communicator& comm, int threads) {
  const comm::HostShare share = comm::host_share(comm, threads);
  if (comm.rank() != share.first || !share.oversubscribed()) return;
  log::warn("host " + comm.host() + " is oversubscribed: " + std::to_string(share.ranks) +
            " rank(s) run " + std::to_string(share.threads) + " TBB threads on " +
            std::to_string(share.cores) +
            " core(s); every step waits for the slowest thread (use --threads " +
            std::to_string(std::max(1, share.cores / share.ranks)) + " or fewer)");
}

}  // namespace dbs::agent
