// dbs-agent's options: one struct, parsed once from the command line.
#pragma once

#include <dbs/planner.h>

#include <optional>
#include <string>

#include "lib/replay/synth.h"
#include "lib/train/config.h"

namespace dbs::agent {

struct Options {
  train::Config train;             // everything the training loop needs
  Remote scheduler;                // the daemon, if any (address empty: none)
  std::string log_level = "info";  // debug | info | warning | error
  std::string simd = "auto";       // fast kernels: auto | a name of nn::simd_supported()
  // Where train.threads came from: "--threads", "SLURM_CPUS_PER_TASK", "OMP_NUM_THREADS", or
  // empty (train.threads 0: choose_threads decides from the rank's CPU mask, node_cpus or the
  // host's cores).
  std::string threads_from;
  // SLURM_CPUS_ON_NODE: the CPUs the Slurm job holds on this rank's node, which differ from node
  // to node on a mixed allocation (0: not in a Slurm job).
  int node_cpus = 0;
  std::string cluster_path;             // --cluster: the spec --model synthetic emulates
  std::optional<replay::Spec> cluster;  // that spec, as the run uses it (agents/cluster.h)
};

// Parses and checks argv, before MPI starts: every value in range, known model and policy, the
// data folder present, the folders of output files and the checkpoint created (mkdir -p) and
// writable. On --help or a usage error, prints and returns false with exit_code set (0 for
// --help, 2 for bad usage). Throws nothing.
bool parse_options(int argc, char** argv, Options& out, int& exit_code);

}  // namespace dbs::agent
