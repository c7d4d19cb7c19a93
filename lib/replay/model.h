// What a replay simulates: a cluster (each rank's step cost over training progress, the ground
// truth) and a per-step cost model (the exchange and overhead on top of the slowest rank's work).
//
// Words: epoch e counts from 0 here (from 1 in traces and output); S = ceil(N / B) steps per
// epoch; step s of epoch e happens at progress e + s / S. Rank i's work in a step of b samples
// costs F * (alpha[e][i] + b / base[e][i]) seconds, F the product of the factors of the slowdowns
// of rank i active at that step, "active" decided exactly as the agent's Disturber does (from <=
// e + 1 + s / S < to, 1-based epochs). Time is training progress, not seconds: a faster policy
// does not outrun a disturbance.
//
// A rank held by a CPU quota below its threads (held[i] > 0, the part of full speed its quota
// sustains: quota cores / threads) has that cost at full speed, and runs it in the quota's CFS
// periods of period_s: each period grants held[i] * period_s seconds of full-speed work, which a
// rank that waits for the others cannot save for later; once spent, the rank is throttled until
// the next period starts. Its work time as the agent reports it is the cost / held[i] (the
// sustained rate), more where the steps' wall time so far runs past that (SustainedTime).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "lib/policy/plan.h"
#include "lib/trace/disturbance.h"

namespace dbs::replay {

inline constexpr double kCfsPeriod = 0.1;  // seconds: the CFS bandwidth period's default

struct Cluster {
  int world = 0;
  int global_batch = 0;                    // B
  std::int64_t samples_per_epoch = 0;      // N
  std::vector<std::vector<double>> base;   // [epoch][rank] samples/s outside slowdowns: 1 / beta
  std::vector<std::vector<double>> alpha;  // [epoch][rank] seconds per step whatever b (empty = 0)
  std::vector<double> held;                // [rank] quota's share of full speed (empty, 0 = none)
  // [rank] (empty = 0): the full-speed seconds a held rank's quota pays each step outside its
  // work, at the step's exchange (its CPU there and for the rest of the step); a rank out of
  // quota then is throttled and the exchange waits for it.
  std::vector<double> held_outside;
  double period_s = kCfsPeriod;  // the quota's period
  // [epoch][rank] (empty = none): the relative standard deviation of the rank's work per step.
  // A step ends with the last of the ranks, so a step of noisy ranks costs the expected maximum
  // of their times (Clark's approximation, normal noise), more than the largest mean.
  std::vector<std::vector<double>> jitter;
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
  // Rank i's work seconds for a step of b samples in epoch e outside slowdowns (0 for b = 0).
  double cost(std::int64_t e, std::size_t i, int b) const {
    if (b <= 0) return 0.0;
    const auto k = static_cast<std::size_t>(e);
    return (alpha.empty() ? 0.0 : alpha[k][i]) + b / base[k][i];
  }
  double held_share(std::size_t i) const { return held.empty() ? 0.0 : held[i]; }
  double held_outside_s(std::size_t i) const {
    return held_outside.empty() ? 0.0 : held_outside[i];
  }
  std::int64_t steps() const { return (samples_per_epoch + global_batch - 1) / global_batch; }
};

// How the allreduce is modelled: ring (bandwidth-optimal: each rank sends 2 (W - 1) / W of the
// bytes in 2 (W - 1) messages) or tree (a binomial reduce to rank 0, then a binomial broadcast:
// 2 ceil(log2 W) messages of all the bytes, latency-optimal).
enum class Allreduce { ring, tree };
const char* to_string(Allreduce a);
// "ring" or "tree"; anything else throws ConfigError.
Allreduce parse_allreduce(const std::string& name);

// Seconds added to every step on top of the slowest rank's work.
struct CostModel {
  double allreduce_s = 0;  // pure allreduce: what the slowest rank spends in it
  double overhead_s = 0;   // what a step holds besides work and allreduce (bookkeeping, waking)
  Allreduce algorithm = Allreduce::ring;  // the allreduce model (informative)
  double latency_s = 0;                   // per message of the allreduce model (informative)
  double bandwidth = 0;  // bytes/s of the allreduce model (0 = infinite; informative)
  double bytes = 0;      // bytes allreduced per step
  double step_s() const { return allreduce_s + overhead_s; }
};

// Ring allreduce of `bytes` over `world` ranks: 2 (W - 1) messages of bytes / W each,
// 2 (W - 1) * latency + 2 (W - 1) / W * bytes / bandwidth; 0 for one rank. bandwidth 0 =
// infinite.
double ring_allreduce_s(int world, double bytes, double latency_s, double bandwidth);
// Tree allreduce: 2 ceil(log2 W) * (latency + bytes / bandwidth); 0 for one rank.
double tree_allreduce_s(int world, double bytes, double latency_s, double bandwidth);
double allreduce_s(Allreduce algorithm, int world, double bytes, double latency_s,
                   double bandwidth);
// Messages on the critical path (2 (W - 1) or 2 ceil(log2 W)), and the bytes each rank's link
// carries per byte of the message along it (2 (W - 1) / W or 2 ceil(log2 W)).
double allreduce_messages(Allreduce algorithm, int world);
double allreduce_volume(Allreduce algorithm, int world);

// Bytes the agent allreduces per step: gradient sums, sample count, loss, and per-rank compute
// time and sample count, as floats (lib/train/epoch.cpp).
double allreduce_bytes(std::int64_t params, int world);

// A plan in force from `step` of its epoch on (step 0: the plan the epoch starts under).
struct PlanAt {
  std::int64_t step = 0;
  std::string source;  // initial, embedded, rebalance, replay, ...
  Plan plan;           // plan.epoch counts from 0
};

}  // namespace dbs::replay
