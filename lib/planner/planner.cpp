#include "lib/planner/planner.h"

#include <string>

#include "lib/common/error.h"

namespace dbs::planner {

Embedded::Embedded(const Settings& settings, int world)
    : policy_(policy::make_policy(settings, world)), plan_(policy_->initial()), world_(world) {}

Planned Embedded::next(std::span<const Report> reports) {
  plan_ = policy_->next(plan_, reports);
  return {plan_, "embedded"};
}

std::optional<Planned> Embedded::rebalance(std::span<const Report> window) {
  Plan p = policy_->next(plan_, window);
  if (!p.changed) return std::nullopt;
  p.epoch = plan_.epoch;
  plan_ = p;
  return Planned{std::move(p), "rebalance"};
}

void Embedded::set_state(const Plan& plan, const std::vector<double>& state) {
  if (plan.world() != world_)
    throw InputError("the plan to restore has " + std::to_string(plan.world()) +
                     " ranks, the job has " + std::to_string(world_));
  if (plan.global_batch != plan_.global_batch)
    throw InputError("the plan to restore has global batch " + std::to_string(plan.global_batch) +
                     ", the job has " + std::to_string(plan_.global_batch));
  policy_->set_state(state);
  plan_ = plan;
}

}  // namespace dbs::planner
