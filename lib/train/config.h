// Configuration of a training run: one struct, filled once by the agent's option parser.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/optim/optimizer.h"
#include "lib/optim/schedule.h"
#include "lib/policy/policy.h"

namespace dbs::train {

// An injected slowdown of one rank (DESIGN.md, "Disturbance"). Epochs count from 1, as
// everywhere users see them, and are fractional: from=2.5 starts halfway through the second
// epoch; to is exclusive (< 0: until the end).
struct Disturbance {
  enum class Mode { sleep, hog };
  int rank = 0;
  double factor = 1.0;   // the rank runs `factor` times slower
  double from = 1.0;     // epoch (1-based, fractional) the disturbance starts
  double to = -1.0;      // epoch (1-based, fractional) it stops; < 0 = never
  Mode mode = Mode::sleep;
  // epoch_progress is 1-based: 1.0 is the start of the first epoch.
  bool active_at(double epoch_progress) const {
    return epoch_progress >= from && (to < 0 || epoch_progress < to);
  }
};

// "rank=R,factor=F[,from=E][,to=E][,mode=sleep|hog]"; throws ConfigError naming the spec and
// the bad field.
Disturbance parse_disturbance(const std::string& spec);
std::string to_string(const Disturbance& d);

struct Config {
  std::string data_dir = "/usr/share/datasets/fashion-mnist";  // Fashion-MNIST IDX files
  std::string model = "cnn";            // cnn | lenet
  int epochs = 5;                       // epochs to train (in total, counting resumed ones)
  int global_batch = 128;               // B: samples per global step, over all ranks
  std::string optimizer = "adam";       // sgd | adam | rmsprop
  optim::OptimizerConfig optim;         // momentum, betas, ...
  optim::ScheduleConfig schedule;       // lr, scaling, warmup, decay (global_batch filled in)
  int threads = 0;                      // TBB threads per rank (0 = all available)
  std::uint64_t seed = 1;               // model init, shuffling, dropout
  std::size_t train_limit = 0;          // use the first N training samples (0 = all)
  std::size_t test_limit = 0;           // use the first N test samples (0 = all)
  std::string policy = "dbs";           // dbs | static | fixed:b0,b1,...
  int min_batch = 1;                    // per-rank bounds for the policy
  int max_batch = 0;                    // 0 = B
  double min_gain = 0.02;               // dbs keeps the plan below this predicted gain
  int rebalance_every = 0;              // re-plan every K steps inside an epoch (0 = per epoch)
  std::vector<Disturbance> disturbances;
  std::string trace_path;               // JSONL trace (rank 0 writes it); empty = none
  std::string checkpoint_dir;           // checkpoint each epoch there; empty = none
  bool resume = false;                  // continue from checkpoint_dir
  std::string save_weights;             // final weights file; empty = none
  std::string summary_path;             // final JSON summary; empty = none
  bool progress = false;                // progress bar on rank 0's stdout (the agent turns it on
                                        // when the job's output is a terminal)
  bool table = true;                    // rank 0 prints the run header and a row per epoch
  std::string allreduce = "mpi";        // recorded in the trace
};

// The policy configuration of a run of `world` ranks on a training set of `train_samples`
// samples before --train-limit: what the trainer's policy gets, and what a planner running the
// same policy beside it (the daemon client) must use.
policy::PolicyConfig policy_config(const Config& config, int world, std::size_t train_samples);

}  // namespace dbs::train
