#include "lib/train/step_history.h"

#include <utility>

#include "lib/policy/cost.h"
#include "lib/policy/steps.h"

namespace dbs::train::detail {

void StepHistory::add(const float* times, const float* counts, const float* works) {
  time.insert(time.end(), times, times + world);
  count.insert(count.end(), counts, counts + world);
  work.insert(work.end(), works, works + world);
}

void StepHistory::skip(std::int64_t steps) {
  time.assign(static_cast<std::size_t>(steps * world), 0.0f);
  count = time;
  work = time;
}

std::vector<Report> StepHistory::reports(std::int64_t epoch, const Plan& plan, std::int64_t begin,
                                         std::int64_t end) const {
  std::vector<Report> out(static_cast<std::size_t>(world));
  for (int i = 0; i < world; ++i) {
    Report& r = out[static_cast<std::size_t>(i)];
    r.rank = i;
    r.epoch = epoch;
    r.batch = plan.batch[static_cast<std::size_t>(i)];
    r.steps = end - begin;
    std::vector<std::pair<double, std::int64_t>> rates;  // (samples / compute s, 1) per step
    std::vector<std::pair<int, double>> steps;           // (samples, work s) per step
    double samples = 0;
    for (std::int64_t s = begin; s < end; ++s) {
      const auto at = static_cast<std::size_t>(s * world + i);
      const double t = static_cast<double>(time[at]);
      const double n = static_cast<double>(count[at]);
      steps.emplace_back(static_cast<int>(n), static_cast<double>(work[at]));
      samples += n;
      r.compute_s += t;
      if (n > 0 && t > 0) rates.emplace_back(n / t, 1);
    }
    r.samples = static_cast<std::int64_t>(samples);
    r.step_rate_median = policy::median_rate(std::move(rates));
    r.work = policy::cost_points(steps);
  }
  return out;
}

}  // namespace dbs::train::detail
