// What a replay simulates: a cluster (each rank's throughput over training progress, the ground
// truth) and a per-step cost model (allreduce and overhead on top of the slowest rank's compute).
//
// Words: epoch e counts from 0 here (from 1 in traces and output); S = ceil(N / B) steps per
// epoch; step s of epoch e happens at progress e + s / S. Rank i's throughput at step s is
// base[e][i] divided by the factors of the slowdowns of rank i active at that step, "active"
// decided exactly as the agent's Disturber does (from <= e + 1 + s / S < to, 1-based epochs).
// Time is training progress, not seconds: a faster policy does not outrun a disturbance.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "lib/policy/plan.h"
#include "lib/trace/disturbance.h"

namespace dbs::replay {

struct Cluster {
  int world = 0;
  int global_batch = 0;                   // B
  std::int64_t samples_per_epoch = 0;     // N
  std::vector<std::vector<double>> base;  // [epoch][rank] samples/s outside slowdowns
  std::vector<trace::Disturbance> slowdowns;
  // [epoch][rank] (empty = all 1): the rank's measured median step rate over the rate the model
  // gives it. Per-step jitter makes the median of b / t differ from samples / compute_s; the
  // policy sees the median, so simulated reports carry the model's median times this factor.
  std::vector<std::vector<double>> median_bias;
  // [epoch][rank] (empty = the trace has no work times): the work points the rank reported over
  // the ones the model gives it under the recorded plans, by point (most steps first). Each
  // simulated report then carries work points (what dbs's cost model plans from): the model's
  // mean work time per step, b / v, times `mean`, with standard deviation `sd` times that mean.
  // A rank that reported none gets none; a point the recorded run lacked uses point 0's factors.
  struct WorkBias {
    bool reported = false;
    std::array<double, 2> mean{1.0, 1.0};
    std::array<double, 2> sd{0.0, 0.0};  // relative to the mean
  };
  std::vector<std::vector<WorkBias>> work_bias;

  int epochs() const { return static_cast<int>(base.size()); }
  std::int64_t steps() const { return (samples_per_epoch + global_batch - 1) / global_batch; }
};

// Seconds added to every step on top of max_i b_i / v_i.
struct CostModel {
  double allreduce_s = 0;  // pure allreduce: what the slowest rank spends in it
  double overhead_s = 0;   // optimizer update, data gathering, bookkeeping
  double latency_s = 0;    // per message of the ring allreduce model (informative)
  double bandwidth = 0;    // bytes/s of the ring allreduce model (0 = infinite; informative)
  double bytes = 0;        // bytes allreduced per step
  double step_s() const { return allreduce_s + overhead_s; }
};

// Ring allreduce of `bytes` over `world` ranks: 2 (W - 1) messages of bytes / W each,
// 2 (W - 1) * latency + 2 (W - 1) / W * bytes / bandwidth; 0 for one rank. bandwidth 0 =
// infinite.
double ring_allreduce_s(int world, double bytes, double latency_s, double bandwidth);

// Bytes the agent allreduces per step: gradient sums, sample count, loss, and per-rank compute
// time and sample count, as floats (lib/train/epoch.cpp).
double allreduce_bytes(std::int64_t params, int world);

// A plan in force from `step` of its epoch on (step 0: the plan the epoch starts under).
struct PlanAt {
  std::int64_t step = 0;
  std::string source;  // initial, embedded, rebalance, replay, ...
  Plan plan;   // plan.epoch counts from 0
};

}  // namespace dbs::replay
