// dbs-agent's options: one struct, parsed once from the command line.
#pragma once

#include <string>

#include "lib/train/config.h"

namespace dbs::agent {

// Where the plans come from when a daemon (dbs-scheduler serve) runs the job.
struct SchedulerOptions {
  std::string address;            // HOST:PORT of the daemon; empty = embedded policy only
  std::string token_file;         // the job token (a file only its owner may read)
  std::string job;                // job id, shared by the job's ranks (e.g. $SLURM_JOB_ID)
  double timeout_s = 10;          // wait this long at the end of an epoch for the daemon's plan
  double connect_timeout_s = 2;   // one connection attempt
};

struct Options {
  train::Config train;            // everything the training loop needs
  SchedulerOptions scheduler;     // the daemon, if any
  std::string log_level = "info"; // debug | info | warning | error
  std::string simd = "auto";      // fast kernels: auto | a name of nn::simd_supported()
};

// Parses argv. On --help or a usage error, prints and returns false with exit_code set
// (0 for --help, 2 for bad usage). Throws nothing.
bool parse_options(int argc, char** argv, Options& out, int& exit_code);

}  // namespace dbs::agent
