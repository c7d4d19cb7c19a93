// The plan from dbs-scheduler serve, with an embedded planner as the fallback. Every rank keeps
// a connection to the daemon (registering on each connect), sends its report at the end of
// each epoch and waits for its share of the daemon's plan of the next one. The ranks then
// rebuild the plan from their shares (one allgather, lib/proto/share.h): the daemon's plan is
// used only when every rank holds a share of the same valid one. Otherwise - daemon unreachable, late, refusing, or ranks
// disagreeing - the epoch uses the fallback's plan; the fallback observes every epoch anyway,
// so its estimates stay current (they are what a checkpoint keeps). The log and the trace (plan
// source "embedded-fallback") say so, and the next epoch tries the daemon again.
#pragma once

#include <memory>
#include <string>

#include "lib/comm/communicator.h"
#include "lib/planner/planner.h"

namespace dbs::planner {

// Where the plans come from when a daemon (dbs-scheduler serve) runs the job.
struct DaemonOptions {
  std::string address;            // HOST:PORT of the daemon; empty = embedded policy only
  std::string token_file;         // the job token (a file only its owner may read)
  std::string job;                // job id, shared by the job's ranks (e.g. $SLURM_JOB_ID)
  double timeout_s = 10;          // wait this long at the end of an epoch for the daemon's plan
  double connect_timeout_s = 2;   // one connection attempt
};

// A planner that asks the daemon at options.address, with an Embedded planner of settings as the
// fallback; source "daemon" or "embedded-fallback", in-epoch re-plans stay embedded.
// Starts connecting at once; finish(done) says goodbye (done = false: stopped early). Throws ConfigError for a bad address or
// token file.
std::unique_ptr<Planner> make_daemon(const DaemonOptions& options, comm::Communicator& comm,
                                     const policy::Settings& settings);

}  // namespace dbs::planner
