// The step rule of an epoch (docs/concepts/architecture.md, "One epoch") is public,
// <dbs/steps.h>, and implemented here in lib/policy, its one home: lib/train's epoch loop runs
// it, lib/replay's simulator costs it and dbs::Sampler serves it to other training loops, so
// the simulator computes what the agents do. What only dbs's own code needs of it is below.
#pragma once

#include <dbs/steps.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "lib/policy/plan.h"

namespace dbs::policy {

// The median of step rates that a report carries (Report::step_rate_median): stats::median
// (lib/common/stats.h) of the rates with each (rate, count) counted as `count` steps of that
// rate, i.e. the value at index n / 2 of the n sorted rates; 0 when there are none.
double median_rate(std::vector<std::pair<double, std::int64_t>> rates);

}  // namespace dbs::policy
