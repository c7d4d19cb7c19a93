// From a trace to what replay simulates: the ground truth (model.h's Cluster) and the per-step
// cost model.
//
// Ground truth: in epoch e rank i computed its samples in compute_s_i seconds; a sample computed
// while slowdowns of factor F were active took F times as long, so the rank's base throughput is
//   base[e][i] = (sum over its steps of b_i(s) * F_i(s)) / compute_s_i,
// with b_i(s) from the recorded plans (re-plans included) and F_i(s) from the disturbance
// records. That is exact for `sleep` slowdowns; for `hog` the nominal factor stands in for the
// real effect. A rank without a measurement in an epoch keeps its value from the nearest epoch
// that has one. The policy sees each rank's median step rate, which per-step jitter sets apart
// from samples / compute_s: the ratio of the recorded median to the model's, under the recorded
// plans, is kept per rank and epoch (Cluster::median_bias) so the simulated policy sees what the
// real one saw; so is the ratio of the recorded work times (Report::work) to the model's, with
// their relative spread (Cluster::work_bias), for traces that have them.
//
// Cost model, per step, fitted from the records (each figure can be given instead):
//   allreduce_s - the slowest rank waits least, so min over ranks of comm_s / S is the pure
//                 allreduce of an epoch; the median over epochs is taken. Split into the ring
//                 model's latency (given, default kDefaultLatency: one trace has one message size,
//                 so latency and bandwidth cannot both be fitted) and the bandwidth that makes
//                 the model reproduce it. A given bandwidth replaces the measured time by the
//                 model's.
//   overhead_s  - what the epochs' wall times hold beyond the compute critical path of the
//                 recorded plans and the allreduce: optimizer update, data gathering, and the
//                 per-step jitter of the slowest rank. Fitted as (sum of wall_s - sum of critical
//                 paths) / (epochs x S) - allreduce_s, so it is exact in total over the trace.
#pragma once

#include <optional>
#include <vector>

#include "lib/replay/model.h"
#include "lib/replay/reader.h"

namespace dbs::replay {

inline constexpr double kDefaultLatency = 20e-6;  // seconds per ring allreduce message

struct CostOptions {
  std::optional<double> latency_s;   // default kDefaultLatency
  std::optional<double> bandwidth;   // bytes/s (0 = infinite); default fitted
  std::optional<double> overhead_s;  // default fitted
};

// Throws InputError when the trace's plans do not fit its header (world, batch).
Cluster cluster_from_trace(const Trace& trace);

struct Fit {
  CostModel cost;
  double measured_allreduce_s = 0;         // per step, from the comm_s records
  double fitted_overhead_s = 0;            // per step, before any --overhead-s
  std::vector<double> recorded_compute_s;  // per epoch: compute critical path of recorded plans
  bool latency_given = false, bandwidth_given = false, overhead_given = false;
};

Fit fit_cost(const Trace& trace, const Cluster& cluster, const CostOptions& options);

// The re-plan interval that visits every recorded re-plan of the epoch: gcd of rebalance_every
// and their steps (0 when there are none and rebalance_every is 0).
int recorded_interval(const EpochRecords& epoch, int rebalance_every);

}  // namespace dbs::replay
