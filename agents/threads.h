// How many TBB threads each rank runs, and a warning when a host's ranks ask for more threads
// than it has cores.
#pragma once

#include <string>

#include "agents/options.h"
#include "lib/comm/communicator.h"

namespace dbs::agent {

struct ThreadChoice {
  int threads = 1;
  std::string why;  // "--threads", "SLURM_CPUS_PER_TASK", ..., "2 cores / 2 rank(s) on the host"
};

// options.train.threads when set (--threads, SLURM_CPUS_PER_TASK, OMP_NUM_THREADS), else the
// rank's cores: those the launcher bound it to, or without binding the host's cores shared
// among the ranks on the host. A collective (the ranks count each other per host).
ThreadChoice choose_threads(comm::Communicator& comm, const Options& options);

// Logs a warning on the first rank of every host whose ranks run more threads in total than the
// host has cores (each then waits for the others at every step). A collective.
void warn_oversubscription(comm::Communicator& comm, int threads);

}  // namespace dbs::agent
