#include "lib/planner/planner.h"

namespace dbs::planner {

Embedded::Embedded(const policy::Settings& settings, int world)
    : policy_(policy::make_policy(settings, world)), plan_(policy_->initial()) {}

Planned Embedded::next(std::span<const policy::Report> reports) {
  plan_ = policy_->next(plan_, reports);
  return {plan_, "embedded"};
}

std::optional<Planned> Embedded::rebalance(std::span<const policy::Report> window) {
  policy::Plan p = policy_->next(plan_, window);
  if (!p.changed) return std::nullopt;
  p.epoch = plan_.epoch;
  plan_ = p;
  return Planned{std::move(p), "rebalance"};
}

void Embedded::set_state(const policy::Plan& plan, const std::vector<double>& state) {
  policy_->set_state(state);
  plan_ = plan;
}

}  // namespace dbs::planner
