// The synchronous data-parallel training loop of DESIGN.md ("One epoch"): one permutation per
// epoch shared by all ranks, each global step split into per-rank slices by the plan, gradient
// sums allreduced together with the sample count, the same update on every rank, and a new
// plan from the planner at the end of every epoch (and every K steps with rebalance_every).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "lib/comm/communicator.h"
#include "lib/data/dataset.h"
#include "lib/planner/planner.h"
#include "lib/train/config.h"

namespace dbs::train {

struct EpochResult {
  std::int64_t epoch = 0;
  double wall_s = 0;          // training time of the epoch (no evaluation)
  double images_per_s = 0;    // N / wall_s
  double ideal_s = 0;         // N / sum of the ranks' throughputs
  double efficiency = 0;      // ideal_s / wall_s
  double train_loss = 0;      // mean over the epoch's samples
  double test_loss = 0;
  double test_acc = 0;        // fraction in [0, 1]
  std::vector<int> batch;            // per rank, at the start of the epoch
  std::vector<double> throughput;    // per rank, samples / compute second
  int replans = 0;            // plan changes inside the epoch (rebalance_every)
  // Per rank, the fraction of wall_s it worked: gather + compute + update at its sustained rate
  // (CPU / quota where a quota holds it back). Empty for an epoch read from a checkpoint, and
  // for one continued from a checkpoint taken inside it (its timings miss the earlier steps).
  std::vector<double> busy;
  // N / sum over ranks of samples_r / busy_r seconds: the epoch had every rank worked all of it
  // at the rate it had in this epoch, i.e. the best split for these speeds (0 = unknown).
  double busy_ideal_s = 0;
};

struct RunResult {
  std::vector<EpochResult> epochs;  // every epoch, resumed ones included
  double test_loss = 0;
  double test_acc = 0;
  double param_l2 = 0;
  double param_sum = 0;
  std::vector<float> params;        // final parameters
  // A stop signal (stop.h) ended the run early: the signal, and where it stopped: epoch
  // stop_epoch (from 1) after stop_step of its steps (0: at its start, the epochs before it done).
  int stop_signal = 0;
  std::int64_t stop_epoch = 0, stop_step = 0;
};

// The checks run() makes of a config for `world` ranks and n_train training samples before it
// trains; throws ConfigError naming the option at fault. For callers that check up front.
void validate(const Config& config, int world, std::size_t n_train);

// Runs the whole training on this rank. data is the full data set (every rank loads it; the
// plan decides which samples a rank computes); pass it moved to save a copy. planner makes every
// plan (nullptr: an embedded one of config.policy); it must be fresh, or restored by a resume.
// Stops early when any rank gets SIGINT/SIGTERM (stop.h), after a checkpoint when configured.
// Throws on any error; the caller aborts the job.
RunResult run(const Config& config, comm::Communicator& comm, data::FashionMnist data,
              planner::Planner* planner = nullptr);

}  // namespace dbs::train
