// How many TBB threads each rank runs, and a warning when a host's ranks ask for more threads
// than it has cores.
#pragma once

#include <string>

#include "agents/options.h"
#include "lib/comm/communicator.h"

namespace dbs::agent {

struct ThreadChoice {
  int threads = 1;
  // "--threads", "SLURM_CPUS_PER_TASK", ..., "SLURM_CPUS_ON_NODE: 4 CPU(s) / 1 rank(s) on the
  // node", "2 core(s) / 2 rank(s) on the host"
  std::string why;
};

// options.train.threads when set (--threads, SLURM_CPUS_PER_TASK, OMP_NUM_THREADS), else the
// rank's cores: those the launcher bound it to; without binding, in a Slurm job the CPUs the job
// holds on the rank's node (options.node_cpus, one value per node), else the host's cores, either
// shared among the ranks on the host. A collective (the ranks count each other per host).
ThreadChoice choose_threads(comm::Communicator& comm, const Options& options);

// Logs a warning on the first rank of every host whose ranks run more threads in total than the
// host has cores (each then waits for the others at every step). A collective.
void warn_oversubscription(comm::Communicator& comm, int threads);

}  // namespace dbs::agent
