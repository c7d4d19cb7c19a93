// The planners behind the public Planner interface (<dbs/planner.h>): Embedded runs a
// policy::Policy on every rank (all ranks see the same reports, so all agree without a
// coordinator); the remote planner (remote.h) asks dbs-scheduler serve and keeps an Embedded
// one as its fallback. The state a checkpoint keeps is the state of the planner that planned.
#pragma once

#include <dbs/planner.h>

#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "lib/policy/policy.h"

namespace dbs::planner {

// The policy run in-process. Source "embedded" (or "rebalance").
class Embedded : public Planner {
 public:
  // The policy of settings for `world` ranks (policy::make_policy); throws ConfigError.
  // set_state throws InputError for a plan of another world size or global batch.
  Embedded(const Settings& settings, int world);

  const Plan& plan() const override { return plan_; }
  Planned next(std::span<const Report> reports) override;
  std::optional<Planned> rebalance(std::span<const Report> window) override;
  std::vector<double> state() const override { return policy_->state(); }
  void set_state(const Plan& plan, const std::vector<double>& state) override;
  // Makes a plan decided elsewhere (the daemon's) the plan in force, after the estimator has
  // observed the reports it was made from (policy::Policy::observe: as next() would, without
  // planning). Throws as next() does.
  void adopt(const Plan& plan, std::span<const Report> reports) {
    policy_->observe(plan_, reports);
    plan_ = plan;
  }

 private:
  std::unique_ptr<policy::Policy> policy_;
  Plan plan_;
  int world_;
};

}  // namespace dbs::planner
