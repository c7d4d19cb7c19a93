#include <dbs/meter.h>

#include <cmath>
#include <string>

#include "lib/common/error.h"
#include "lib/policy/cost.h"
#include "lib/policy/steps.h"

namespace dbs {

void Meter::step(int samples, double work_s, double comm_s, double compute_s) {
  if (compute_s < 0) compute_s = work_s;
  if (samples < 0) throw InputError("a step of " + std::to_string(samples) + " samples");
  const auto bad = [](double t) { return !std::isfinite(t) || t < 0; };
  if (bad(work_s)) throw InputError("step work time " + std::to_string(work_s) + " s");
  if (bad(comm_s)) throw InputError("step allreduce time " + std::to_string(comm_s) + " s");
  if (bad(compute_s)) throw InputError("step compute time " + std::to_string(compute_s) + " s");
  work_.emplace_back(samples, work_s);
  if (samples > 0 && compute_s > 0) rates_.emplace_back(samples / compute_s, 1);
  samples_ += samples;
  compute_s_ += compute_s;
  comm_s_ += comm_s;
}

Report Meter::report(const Plan& plan, int rank) const {
  if (rank < 0 || rank >= plan.world())
    throw InputError("rank " + std::to_string(rank) + " out of range for a plan of " +
                     std::to_string(plan.world()) + " ranks");
  Report r;
  r.rank = rank;
  r.epoch = plan.epoch;
  r.batch = plan.batch[static_cast<std::size_t>(rank)];
  r.samples = samples_;
  r.compute_s = compute_s_;
  r.comm_s = comm_s_;
  r.step_rate_median = policy::median_rate(rates_);
  r.steps = steps();
  r.work = policy::cost_points(work_);
  return r;
}

void Meter::reset() {
  *this = Meter{};
}

}  // namespace dbs
