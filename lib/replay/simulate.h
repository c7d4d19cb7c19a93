// The step-by-step simulation of synchronous training on a cluster (model.h): every step costs
// the slowest rank's work, max_i F_i (alpha_i + b_i / v_i) (a held rank's as its quota's periods
// allow), plus the cost model's per-step seconds; the plans come from the very same
// policy objects the agent and the daemon run (lib/policy), fed with the reports the simulated
// ranks would send.
//
// The loop runs the agent's rules (lib/train/epoch.cpp and trainer.cpp): the step rules of
// lib/policy/steps.h (a short last step split in the plan's proportions, the median of step
// rates) and its planner (lib/planner, embedded); a re-plan every K steps (not after the last
// one) sees the window's reports (comm_s 0, as in the agent); with re-plans every K steps the
// next epoch's plan is made from the reports over the epoch's last K steps (`basis`). Steps
// whose costs and batch sizes do not change are costed together, so a run without held ranks
// costs O(epochs x (events + 1) x world) however many steps an epoch has; a held rank's steps
// are costed one by one.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lib/policy/policy.h"
#include "lib/replay/model.h"

namespace dbs::replay {

// Where an epoch's time goes: time_s = ideal_compute_s (every step split perfectly) + the
// imbalance (compute_s - ideal_compute_s) + exchange_s + overhead_s.
struct EpochRun {
  double time_s = 0;            // training time of the epoch: compute_s + exchange_s + overhead_s
  double compute_s = 0;         // sum over steps of the slowest rank's work
  double exchange_s = 0;        // S * the cost model's allreduce
  double overhead_s = 0;        // S * the cost model's overhead
  double ideal_s = 0;           // ideal_compute_s + exchange_s + overhead_s
  double ideal_compute_s = 0;   // sum over steps of the common level of a perfect split
  int replans = 0;              // plan changes inside the epoch
  int changes = 0;              // replans, plus 1 when the epoch starts under a changed plan
  std::vector<PlanAt> plans;    // [0]: the plan it started under, then each change
  std::vector<Report> reports;  // per rank over the epoch (comm_s includes waiting)
  std::vector<Report> basis;    // with re-plans every K steps: over the last K steps
  Plan next;                    // the plan for the next epoch (simulate only)
};

// Called after every K-th step of an epoch (not after its last step) with the plan in force,
// the number of steps done and the reports over the steps since the last call; returns the plan
// to switch to, or nothing to keep the current one.
using Replanner = std::function<std::optional<Plan>(const Plan& current, std::int64_t step,
                                                    std::span<const Report> window)>;

// Epoch `epoch` (from 0) of the cluster starting under `start`; rebalance_every 0 = no re-plans.
EpochRun run_epoch(const Cluster& cluster, const CostModel& cost, std::int64_t epoch,
                   const PlanAt& start, int rebalance_every, const Replanner& replan);

// The steps of epoch `epoch` at which some rank's throughput changes (a slowdown starts or
// stops), sorted, each in (0, S).
std::vector<std::int64_t> rate_changes(const Cluster& cluster, std::int64_t epoch);
// Every rank's throughput (samples/s: base / F, the per-sample part of its cost) at step `step`
// of epoch `epoch`.
std::vector<double> rates_at(const Cluster& cluster, std::int64_t epoch, std::int64_t step);

struct SimResult {
  Settings config;  // global_batch and samples_per_epoch: the cluster's
  std::vector<EpochRun> epochs;
  double total_s = 0;
  double ideal_s = 0;
  double ideal_compute_s = 0, compute_s = 0, exchange_s = 0, overhead_s = 0;  // summed
  int changes = 0;
  double efficiency() const { return total_s > 0 ? ideal_s / total_s : 0.0; }
};

// Runs every epoch of the cluster under the policy of `settings` (its global batch and samples
// per epoch replaced by the cluster's). Throws ConfigError for a bad policy spec or bounds that
// do not fit the cluster.
SimResult simulate(const Cluster& cluster, const CostModel& cost, Settings settings);

}  // namespace dbs::replay
