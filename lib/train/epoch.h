// Internal to lib/train: one epoch of the step loop, and what the trainer keeps of it.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "lib/comm/communicator.h"
#include "lib/data/dataset.h"
#include "lib/data/sampler.h"
#include "lib/nn/model.h"
#include "lib/planner/planner.h"
#include "lib/policy/plan.h"
#include "lib/trace/records.h"
#include "lib/trace/trace.h"
#include "lib/train/config.h"
#include "lib/train/disturb.h"
#include "lib/train/exchange.h"
#include "lib/train/local_sgd.h"

namespace dbs::train::detail {

// What one rank measured in one epoch, and what all ranks computed together.
struct EpochStats {
  std::int64_t stopped_after = -1;  // steps done when the ranks agreed to stop (-1: ran to the end)
  Report report;                    // this rank's
  double wall_s = 0;
  double loss_sum = 0;       // over all ranks' samples
  std::int64_t samples = 0;  // over all ranks
  int replans = 0;
  int averages = 0;  // model averages (0: a synchronous epoch)
  // Continued from a checkpoint taken inside it: wall_s and the report hold the steps before
  // the interruption, the epoch's timing only those after it.
  bool continued = false;
  // With rebalance_every: every rank's report over the epoch's last K steps, which the next
  // plan is made from instead of the whole-epoch reports.
  std::vector<Report> plan_reports;
};

// An epoch stopped after some steps by a signal: what a checkpoint keeps to continue it.
struct Interrupted {
  std::int64_t epoch = 0;  // 0-based
  std::int64_t steps_done = 0;
  EpochStats stats;             // this rank's figures so far (wall_s: rank 0's)
  std::vector<Report> reports;  // every rank's report so far (samples, compute, comm)
};

// What the step loop works with, all of it owned by the trainer.
struct EpochParts {
  const Config& config;
  comm::Communicator& comm;
  const data::Dataset& train;
  data::PermutationsAhead& orders;  // train's epoch permutations
  nn::Model& model;
  Planner& planner;          // owns the plan in force; makes every change to it
  Exchange& exchange;        // the synchronous epochs'
  Exchange& local_exchange;  // the averaging epochs' compute (no exchange inside the backward)
  LocalSgd* local;           // the averaging epochs' (null: the run never averages)
  Disturber& disturber;
  trace::Writer* trace;  // rank 0's, or null
};

// Trains one epoch under the planner's plan (which rebalance_every may change during the epoch),
// from resume_at's step when it holds this epoch (and then clears it): synchronously, or with
// local steps and model averages where config.averages_in(epoch). Stops early, after the step in
// which any rank had a stop signal (stop.h), with stopped_after set on every rank; in an
// averaging epoch the ranks learn of it at the next average and stop after it.
// timing gets where this rank's epoch went.
EpochStats run_epoch(const EpochParts& parts, std::int64_t epoch,
                     std::optional<Interrupted>& resume_at, trace::Timing& timing);

// Test loss and accuracy of the model's parameters, the test set split across ranks (a
// collective).
std::pair<double, double> evaluate(comm::Communicator& comm, nn::Model& model,
                                   const data::Dataset& test);

// A progress bar on stdout while an epoch runs, when enabled (Config::progress, rank 0 only).
class Progress {
 public:
  Progress(bool enabled, std::int64_t epoch, std::int64_t steps);
  void update(std::int64_t step, double images_per_s);
  ~Progress();

 private:
  bool enabled_;
  std::int64_t epoch_, steps_;
  double last_ = -1;
};

}  // namespace dbs::train::detail
