// Who decides the plan (DESIGN.md): one Planner owns the plan in force and makes every change
// to it, at epoch ends and inside epochs (rebalance_every). Embedded runs a policy::Policy on
// every rank (all ranks see the same reports, so all agree without a coordinator); the daemon
// planner (daemon.h) asks dbs-scheduler serve and keeps an Embedded one as its fallback. The
// state a checkpoint keeps is the state of the planner that planned.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lib/policy/policy.h"

namespace dbs::planner {

// A plan and where it came from: "initial", "embedded", "daemon", "embedded-fallback" (the
// daemon's plan was not usable) or "rebalance" (inside an epoch); the trace records it.
struct Planned {
  policy::Plan plan;
  std::string source;
};

class Planner {
 public:
  virtual ~Planner() = default;
  // The plan in force: epoch 0's before any report, then the last one made or restored.
  virtual const policy::Plan& plan() const = 0;
  // Epoch end: the plan of plan().epoch + 1 from all ranks' reports (identical on every rank,
  // one per rank); it becomes the plan in force.
  virtual Planned next(std::span<const policy::Report> reports) = 0;
  // Inside the epoch: a re-plan from all ranks' reports over the steps since the last re-plan.
  // A changed plan (for the same epoch) becomes the plan in force and is returned; nothing when
  // the plan stays.
  virtual std::optional<Planned> rebalance(std::span<const policy::Report> window) = 0;
  // The estimator state of the policy that plans, to continue identically after a resume.
  virtual std::vector<double> state() const = 0;
  // Restores a checkpoint: the plan in force and state(). Throws InputError for a bad state.
  virtual void set_state(const policy::Plan& plan, const std::vector<double>& state) = 0;
  // This rank leaves the job: done (all epochs trained) or stopped early (a signal; the job may
  // be resumed). The daemon planner says goodbye.
  virtual void finish(bool /*done*/) {}
};

// The policy run in-process. Source "embedded" (or "rebalance").
class Embedded : public Planner {
 public:
  // The policy of settings for `world` ranks (policy::make_policy); throws ConfigError.
  Embedded(const policy::Settings& settings, int world);

  const policy::Plan& plan() const override { return plan_; }
  Planned next(std::span<const policy::Report> reports) override;
  std::optional<Planned> rebalance(std::span<const policy::Report> window) override;
  std::vector<double> state() const override { return policy_->state(); }
  void set_state(const policy::Plan& plan, const std::vector<double>& state) override;
  // Makes a plan decided elsewhere (the daemon's) the plan in force; the estimator keeps what
  // it observed.
  void adopt(const policy::Plan& plan) { plan_ = plan; }

 private:
  std::unique_ptr<policy::Policy> policy_;
  policy::Plan plan_;
};

}  // namespace dbs::planner
