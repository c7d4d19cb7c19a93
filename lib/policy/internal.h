// Pieces shared by the policies of lib/policy; not part of its interface.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lib/common/format.h"
#include "lib/policy/policy.h"

namespace dbs::policy::detail {

// The reports indexed by rank, after checking that there is exactly one per rank of world and
// that every figure is finite and >= 0. Throws InputError naming the rank and the field.
std::vector<Report> by_rank(std::span<const Report> reports, int world);

// A report's throughput in samples/s: step_rate_median when known, else samples / compute_s;
// 0 when the report carries no measurement (samples or compute_s is 0).
double measured_rate(const Report& report);

// Checks that current fits the job: world, global batch, sizes >= 0 summing to it; throws
// InputError.
void check_current(const Plan& current, const Settings& settings, int world);

// plan.throughput, predicted_epoch_s, ideal_epoch_s and exchange_epoch_s for throughputs v (0 =
// unknown rank) and `exchange_s` seconds of exchange in the epoch (lib/policy/cost.h): the
// predicted epoch is the slowest rank's compute at every step plus the exchange; the ideal, N /
// sum v, leaves the exchange out. Throws InputError when a prediction is not finite: a policy
// never returns such a plan.
void fill_predictions(Plan& plan, const std::vector<double>& v, std::int64_t samples_per_epoch,
                      double exchange_s);

// How apportion hands out the leftover samples after every rank got floor(x_i) of its exact
// share x_i: largest_remainder to the largest x_i - floor(x_i); least_step_time to the ranks
// whose step time (floor(x_i) + 1) / w_i grows least, then by largest remainder. Ties: lower rank.
enum class Rounding { largest_remainder, least_step_time };
std::vector<int> apportion(const std::vector<double>& weights, int total, int lo, int hi,
                           Rounding rounding);

// "dbs-rate" (cost_model false) or "dbs" (true: plans by the cost model when reports carry
// work times).
std::unique_ptr<Policy> make_dbs(const Settings& settings, int world, bool cost_model);
std::unique_ptr<Policy> make_static(const Settings& settings, int world);
std::unique_ptr<Policy> make_fixed(const Settings& settings, int world);

}  // namespace dbs::policy::detail
