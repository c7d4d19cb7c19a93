// The step rules of docs/concepts/architecture.md "One epoch", in one place: lib/train's epoch loop
// runs them and lib/replay's simulator costs them, so the simulator computes what the agents do.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include <dbs/steps.h>

#include "lib/policy/plan.h"

namespace dbs::policy {

using dbs::step_batch;  // public: <dbs/steps.h>

// The median of step rates that a report carries (Report::step_rate_median): stats::median
// (lib/common/stats.h) of the rates with each (rate, count) counted as `count` steps of that
// rate, i.e. the value at index n / 2 of the n sorted rates; 0 when there are none.
double median_rate(std::vector<std::pair<double, std::int64_t>> rates);

}  // namespace dbs::policy
