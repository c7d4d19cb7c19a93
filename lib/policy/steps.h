// The step rules of DESIGN.md "One epoch", in one place: lib/train's epoch loop runs them and
// lib/replay's simulator costs them, so the simulator computes what the agents do.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "lib/policy/plan.h"

namespace dbs::policy {

// Per-rank sizes of a global step of `samples` samples under plan: plan.batch for a full step
// (samples == plan.global_batch); a short last step is split in the plan's proportions
// (largest remainder, sum == samples). Rank i takes [o_i, o_i + b_i) with o = offsets_of(b).
std::vector<int> step_batch(const Plan& plan, int samples);

// The median of step rates that a report carries (Report::step_rate_median): stats::median
// (lib/common/stats.h) of the rates with each (rate, count) counted as `count` steps of that
// rate, i.e. the value at index n / 2 of the n sorted rates; 0 when there are none.
double median_rate(std::vector<std::pair<double, std::int64_t>> rates);

}  // namespace dbs::policy
