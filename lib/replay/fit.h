// From a trace to what replay simulates: the ground truth (model.h's Cluster) and the per-step
// cost model.
//
// Ground truth, per rank i and epoch e: its work per step t(b) = alpha + beta * b outside
// slowdowns (the rank's time between two allreduces: gathering its slice, forward + backward,
// the optimizer update; a slowdown of factor F multiplies it by F).
//   - Shape: the fixed cost in samples, a_i = alpha_i / beta_i, is one figure per rank for the
//     whole trace, fitted by weighted least squares (policy::fit_samples) to the rank's work
//     points (Report::work, mean work per step at a batch size) with at least kShapeSteps steps,
//     from the epochs in which its slowdown factor F does not change, divided by F. It needs
//     two batch sizes: a rank that ran one (the equal split of a static run; the short last
//     step, a single noisy step, does not count) is assumed proportional, a_i = 0. At the equal
//     split that predicts the balanced step exactly when the ranks' a_i are alike (the same code
//     on similar cores, slowed as a whole), whatever their value; a run records a second size
//     whenever its plan changes: under dbs the first epoch's equal split and the next epoch's plan.
//   - Level: each epoch's beta from what the rank measured in it, with the shape fixed, so that
//     the model reproduces the epoch under its recorded plans (re-plans included): the recorded
//     work points over the model's at the same batch sizes, or, for reports without work times
//     (older traces), samples / compute_s as before (a_i = 0; the update and gathering are then
//     in the overhead).
//   - Held ranks: a rank whose cpu records give a quota below its threads (header "threads",
//     1 when absent) has held = quota / threads, the period of the records (kCfsPeriod when not
//     recorded), and a cost at full speed: its reported work is the sustained time, cost / held.
//     Its quota also pays what its timing records show it used outside its work (process CPU -
//     busy * quota a step: the exchange's CPU), Cluster::held_outside.
//   - Jitter: the relative standard deviation of a rank's work per step at its main point, the
//     median over the epochs (Cluster::jitter); the slowest of several noisy ranks is later on
//     average than the slowest mean, which is what a balanced split pays per step. Step times
//     are skewed (rare long steps) more than normal: where the expected maxima would make the
//     recorded plans' critical path and the allreduce (as estimated under the full jitter)
//     longer than the recorded walls, every rank's jitter is scaled down until they fit.
//   - The rank's measured median step rate and work points over the model's, under the recorded
//     plans (Cluster::median_bias and work_bias), so the simulated policy sees what the real one
//     saw. That is exact for `sleep` slowdowns; for `hog` the nominal factor stands in for the
//     real effect. A rank without a measurement in an epoch keeps its value from the nearest
//     epoch that has one.
//
// Cost model, per step, fitted from the records (each figure can be given instead):
//   allreduce_s - a rank's comm_s holds the allreduce and its wait for the slowest rank in each
//                 step, and the model gives that wait under the recorded plans (with jitter,
//                 the expected maximum less the rank's own time): the mean over the ranks of
//                 comm_s less the model's wait, per step, is the pure allreduce of an epoch;
//                 the median over epochs is taken, at most the least comm_s (the last to
//                 arrive waits least) and at least 0. Split into the
//                 model's latency (given, default kDefaultLatency: one trace has one message
//                 size, so latency and bandwidth cannot both be fitted) and the bandwidth that
//                 makes the model (ring or tree, allreduce_messages and allreduce_volume)
//                 reproduce it. A given bandwidth replaces the measured time by the model's.
//   overhead_s  - what the epochs' wall times hold beyond the simulated critical path of the
//                 recorded plans and the allreduce (bookkeeping, waking a sleeping rank). Fitted
//                 as (sum of wall_s - sum of critical paths) / (epochs x S) - allreduce_s, so it
//                 is exact in total over the trace.
#pragma once

#include <optional>
#include <vector>

#include "lib/replay/model.h"
#include "lib/replay/reader.h"
#include "lib/replay/simulate.h"

namespace dbs::replay {

inline constexpr double kDefaultLatency = 20e-6;  // seconds per allreduce message
inline constexpr std::int64_t kShapeSteps = 3;    // least steps of a work point the shape uses

struct CostOptions {
  std::optional<double> latency_s;   // default kDefaultLatency
  std::optional<double> bandwidth;   // bytes/s (0 = infinite); default fitted
  std::optional<double> overhead_s;  // default fitted
  Allreduce algorithm = Allreduce::ring;
};

// How a rank's cost was fitted, for the model line.
struct RankFit {
  double shape = 0;  // a_i = alpha / beta, samples (0 = proportional)
  int sizes = 0;     // distinct batch sizes the shape was fitted from (< 2: assumed)
  int min_batch = 0, max_batch = 0;  // their range
  double held = 0;                   // the quota's share of full speed (0 = none)
};

// Throws InputError when the trace's plans do not fit its header (world, batch).
Cluster cluster_from_trace(const Trace& trace, std::vector<RankFit>* fits = nullptr);

struct Fit {
  CostModel cost;
  std::vector<RankFit> ranks;
  double measured_allreduce_s = 0;         // per step, from the comm_s records
  double fitted_overhead_s = 0;            // per step, before any --overhead-s
  std::vector<double> recorded_compute_s;  // per epoch: critical path of the recorded plans
  bool latency_given = false, bandwidth_given = false, overhead_given = false;
};

Fit fit_cost(const Trace& trace, const Cluster& cluster, const CostOptions& options);

// The re-plan interval that visits every recorded re-plan of the epoch: gcd of rebalance_every
// and their steps (0 when there are none and rebalance_every is 0).
int recorded_interval(const EpochRecords& epoch, int rebalance_every);

// Epoch k of the trace simulated on `cluster` under its recorded plans.
EpochRun recorded_run(const Trace& trace, const Cluster& cluster, const CostModel& cost,
                      std::size_t k);

}  // namespace dbs::replay
