// Balancing policies: pure, deterministic observe -> decide objects with no I/O, so the agent,
// the daemon and replay run the very same code and agree bit for bit.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lib/policy/plan.h"

namespace dbs::policy {

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string name() const = 0;
  // The plan for epoch 0, before anything was measured.
  virtual Plan initial() const = 0;
  // The plan for current.epoch + 1 from the reports of current.epoch (one per rank, any
  // order). Throws InputError if a report is for an unknown rank or has non-finite or negative
  // times.
  virtual Plan next(const Plan& current, std::span<const Report> reports) = 0;
  // What next() learns from the same reports, without the plan: for a planner that takes its
  // plans from elsewhere (the daemon) and must stay able to plan the next epoch itself. Throws
  // as next() does. The default makes the plan and drops it.
  virtual void observe(const Plan& current, std::span<const Report> reports) {
    next(current, reports);
  }
  // Estimator state, so that a restarted daemon or a resumed run continues identically.
  virtual std::vector<double> state() const { return {}; }
  virtual void set_state(const std::vector<double>& /*state*/) {}
};

// The policy of settings.policy (PolicySpec, <dbs/plan.h>): dbs (the cost model where reports
// carry work times, else batch in proportion to throughput), dbs-rate (always in proportion to
// throughput), static or fixed (its sizes must number world and sum to global_batch), for a job
// of `world` ranks. Throws ConfigError naming the spec or the setting at fault.
std::unique_ptr<Policy> make_policy(const Settings& settings, int world);

// Largest-remainder apportionment of total over weights, within [lo, hi] per rank: sum == total
// exactly. Requires world * lo <= total <= world * hi. Deterministic tie-break by rank index.
std::vector<int> apportion(const std::vector<double>& weights, int total, int lo, int hi);

// Predicted epoch compute time of a plan for throughputs v: steps * max_i b_i / v_i, where
// steps = ceil(N / B).
double predicted_epoch_s(const std::vector<int>& batch, const std::vector<double>& v,
                         std::int64_t samples_per_epoch);

}  // namespace dbs::policy
