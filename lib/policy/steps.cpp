#include "lib/policy/steps.h"

#include <algorithm>

#include "lib/policy/policy.h"

namespace dbs {

std::vector<int> step_batch(const Plan& plan, int samples) {
  if (samples == plan.global_batch) return plan.batch;
  return policy::apportion(std::vector<double>(plan.batch.begin(), plan.batch.end()), samples, 0, samples);
}

}  // namespace dbs

namespace dbs::policy {

double median_rate(std::vector<std::pair<double, std::int64_t>> rates) {
  std::sort(rates.begin(), rates.end());
  std::int64_t total = 0, seen = 0;
  for (const auto& r : rates) total += r.second;
  for (const auto& [rate, count] : rates) {
    seen += count;
    if (total / 2 < seen) return rate;
  }
  return 0.0;
}

}  // namespace dbs::policy
