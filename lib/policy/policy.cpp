// make_policy, apportion, predicted_epoch_s and the checks every policy shares.
#include "lib/policy/policy.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <utility>

#include "lib/common/error.h"
#include "lib/policy/ideal.h"
#include "lib/policy/internal.h"

namespace dbs::policy {
namespace detail {

namespace {

// "" when x is finite and >= 0, else what is wrong with it.
std::string bad_figure(double x) {
  if (std::isnan(x)) return "is NaN";
  if (std::isinf(x)) return x > 0 ? "is infinite" : "is -infinite";
  if (x < 0) return format("is negative (%g)", x);
  return "";
}

void check_figure(int rank, const char* field, double x) {
  if (const std::string bad = bad_figure(x); !bad.empty()) {
    throw InputError(format("report of rank %d: %s %s", rank, field, bad.c_str()));
  }
}

void check_count(int rank, const char* field, std::int64_t x) {
  if (x < 0) {
    throw InputError(
        format("report of rank %d: %s is negative (%lld)", rank, field, static_cast<long long>(x)));
  }
}

void check_config(const Settings& c, int world) {
  const auto fail = [](const std::string& what) { throw ConfigError("policy config: " + what); };
  if (world < 1) fail(format("world must be >= 1, got %d", world));
  if (c.global_batch < 1) fail(format("global batch must be >= 1, got %d", c.global_batch));
  if (c.min_batch < 1) fail(format("min_batch must be >= 1, got %d", c.min_batch));
  if (c.max_batch != 0 && c.max_batch < c.min_batch) {
    fail(format("max_batch must be 0 (= global batch) or >= min_batch %d, got %d", c.min_batch,
                c.max_batch));
  }
  const std::int64_t w = world;
  if (w * c.min_batch > c.global_batch || w * c.max_batch_or_global() < c.global_batch) {
    fail(format("%d ranks with batch in [%d, %d] cannot make a global batch of %d", world,
                c.min_batch, c.max_batch_or_global(), c.global_batch));
  }
  if (!std::isfinite(c.min_gain) || c.min_gain < 0 || c.min_gain >= 1) {
    fail(format("min_gain must be in [0, 1), got %g", c.min_gain));
  }
  if (c.average_every < 0 || c.average_after_epochs < 0) {
    fail(format("average_every and average_after_epochs must be >= 0, got %d and %d",
                c.average_every, c.average_after_epochs));
  }
  // Under model averaging the ranks learn each other's step times only at the averages.
  if (c.average_every > 0 && c.rebalance_every % c.average_every != 0) {
    fail(
        format("rebalance_every %d is not a multiple of average_every %d (the ranks learn each "
               "other's step times at the averages)",
               c.rebalance_every, c.average_every));
  }
  if (c.samples_per_epoch < 0) {
    fail(format("samples_per_epoch must be >= 0, got %lld",
                static_cast<long long>(c.samples_per_epoch)));
  }
}

// The level L with sum_i clamp(L * w_i, lo, hi) == total, for n * lo < total < n * hi.
// f(L) = sum_i clamp(L * w_i, lo, hi) is continuous, piecewise linear and rises from n * lo to
// n * hi; rank i leaves lo at L = lo / w_i and reaches hi at L = hi / w_i, so in order of
// decreasing weight the ranks leave lo, and reach hi, one after another. The sweep walks both
// sequences as a merge, tracking f(L) = fixed + slope * L (fixed: samples of the clamped ranks,
// slope: the weight of the free ones) until f reaches total: O(n log n), or O(n) when no bound
// binds at L = total / sum_i w_i.
double water_level(const std::vector<double>& w, int total, int lo, int hi) {
  const std::size_t size = w.size();
  // One exact pass at a trial level: the level that is right if no rank changes side.
  const auto refine = [&](double level) {
    std::int64_t fixed = 0;
    double slope = 0;
    for (std::size_t i = 0; i < size; ++i) {
      const double x = level * w[i];
      if (x <= lo) {
        fixed += lo;
      } else if (x >= hi) {
        fixed += hi;
      } else {
        slope += w[i];
      }
    }
    return slope > 0 ? static_cast<double>(total - fixed) / slope : level;
  };
  const double all_free = total / std::accumulate(w.begin(), w.end(), 0.0);
  if (std::all_of(w.begin(), w.end(),
                  [&](double x) { return all_free * x >= lo && all_free * x <= hi; })) {
    return refine(all_free);
  }
  // (-w_i, i) ascending: decreasing weight, lower rank first.
  std::vector<std::pair<double, std::size_t>> by_weight(size);
  for (std::size_t i = 0; i < size; ++i) by_weight[i] = {-w[i], i};
  std::sort(by_weight.begin(), by_weight.end());
  std::vector<std::size_t> order(size);
  for (std::size_t k = 0; k < size; ++k) order[k] = by_weight[k].second;
  std::int64_t fixed = static_cast<std::int64_t>(size) * lo;
  double slope = 0;
  std::size_t left_lo = 0, at_hi = 0;  // order[0, left_lo) left lo; order[0, at_hi) reached hi
  for (;;) {
    DBS_CHECK_LT(at_hi, size);
    const double hi_at = hi / w[order[at_hi]];
    const bool leave = left_lo < size && lo / w[order[left_lo]] <= hi_at;
    const double at = leave ? lo / w[order[left_lo]] : hi_at;
    if (static_cast<double>(fixed) + slope * at >= total) break;
    if (leave) {
      fixed -= lo;
      slope += w[order[left_lo++]];
    } else {
      fixed += hi;
      slope -= w[order[at_hi++]];
    }
  }
  return refine(static_cast<double>(total - fixed) / slope);
}

}  // namespace

std::vector<Report> by_rank(std::span<const Report> reports, int world) {
  std::vector<Report> out(static_cast<std::size_t>(world));
  std::vector<bool> seen(static_cast<std::size_t>(world), false);
  for (const Report& r : reports) {
    if (r.rank < 0 || r.rank >= world) {
      throw InputError(format("report for rank %d but the job has %d ranks", r.rank, world));
    }
    if (seen[static_cast<std::size_t>(r.rank)]) {
      throw InputError(format("two reports for rank %d", r.rank));
    }
    check_count(r.rank, "samples", r.samples);
    check_count(r.rank, "steps", r.steps);
    check_figure(r.rank, "compute_s", r.compute_s);
    check_figure(r.rank, "comm_s", r.comm_s);
    check_figure(r.rank, "step_rate_median", r.step_rate_median);
    seen[static_cast<std::size_t>(r.rank)] = true;
    out[static_cast<std::size_t>(r.rank)] = r;
  }
  for (int i = 0; i < world; ++i) {
    if (!seen[static_cast<std::size_t>(i)]) {
      throw InputError(
          format("no report for rank %d (%zu reports for %d ranks)", i, reports.size(), world));
    }
  }
  return out;
}

double measured_rate(const Report& r) {
  if (r.samples <= 0 || r.compute_s <= 0) return 0.0;
  return r.step_rate_median > 0 ? r.step_rate_median : r.throughput();
}

void check_current(const Plan& current, const Settings& config, int world) {
  if (current.world() != world || current.offset.size() != current.batch.size()) {
    throw InputError(
        format("current plan has %d batch sizes and %zu offsets but the job has %d ranks",
               current.world(), current.offset.size(), world));
  }
  if (current.global_batch != config.global_batch) {
    throw InputError(format("current plan has global batch %d but the job has %d",
                            current.global_batch, config.global_batch));
  }
  std::int64_t sum = 0;
  for (const int b : current.batch) {
    if (b < 0) throw InputError(format("current plan has a negative batch size %d", b));
    sum += b;
  }
  if (sum != current.global_batch) {
    throw InputError(format("current plan's batch sizes sum to %lld, not its global batch %d",
                            static_cast<long long>(sum), current.global_batch));
  }
}

void fill_predictions(Plan& plan, const std::vector<double>& v, std::int64_t samples_per_epoch,
                      double exchange_s) {
  for (std::size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i]))
      throw InputError(format("plan for epoch %lld: throughput of rank %zu is %g, not finite",
                              static_cast<long long>(plan.epoch + 1), i, v[i]));
  plan.throughput = v;
  const bool known = std::all_of(v.begin(), v.end(), [](double x) { return x > 0; });
  plan.predicted_epoch_s = known ? predicted_epoch_s(plan.batch, v, samples_per_epoch) : 0.0;
  plan.exchange_epoch_s = known && plan.predicted_epoch_s > 0 ? exchange_s : 0.0;
  plan.predicted_epoch_s += plan.exchange_epoch_s;
  plan.ideal_epoch_s = known ? ideal_time(v, static_cast<double>(samples_per_epoch)) : 0.0;
  if (!std::isfinite(plan.predicted_epoch_s) || !std::isfinite(plan.ideal_epoch_s))
    throw InputError(
        format("plan for epoch %lld: predicted epoch time %g s, ideal %g s: not "
               "finite (throughputs too small or too large)",
               static_cast<long long>(plan.epoch + 1), plan.predicted_epoch_s, plan.ideal_epoch_s));
}

// Apportionment within bounds. Words: w_i the weights scaled to (0, 1]; x_i = clamp(L * w_i, lo,
// hi) rank i's exact share at the water level L where they sum to total (water_level: the same
// result as "clamp, redistribute over the free ranks, repeat" without its O(n^2) worst case).
// Every rank gets floor(x_i) and the total - sum floor(x_i) (< n) leftover samples go one each
// to the ranks that `rounding` ranks first, so every b_i is floor(x_i) or ceil(x_i).
std::vector<int> apportion(const std::vector<double>& weights, int total, int lo, int hi,
                           Rounding rounding) {
  const auto n = static_cast<std::int64_t>(weights.size());
  if (n == 0) throw ConfigError(format("apportion: no ranks to share %d", total));
  if (lo < 0 || hi < lo) {
    throw ConfigError(format("apportion: bounds [%d, %d] are invalid", lo, hi));
  }
  if (n * lo > total || total > n * hi) {
    throw ConfigError(
        format("apportion: %lld ranks with [%d, %d] each cannot share %d (feasible %lld..%lld)",
               static_cast<long long>(n), lo, hi, total, static_cast<long long>(n * lo),
               static_cast<long long>(n * hi)));
  }
  const auto size = static_cast<std::size_t>(n);
  if (total == n * lo) return std::vector<int>(size, lo);
  if (total == n * hi) return std::vector<int>(size, hi);

  // Invalid weights count as the smallest valid one; all invalid means equal weights.
  double w_min = 0, w_max = 0;
  for (const double x : weights) {
    if (!std::isfinite(x) || x <= 0) continue;
    w_min = w_min == 0 ? x : std::min(w_min, x);
    w_max = std::max(w_max, x);
  }
  std::vector<double> w(size, 1.0);
  if (w_max > 0) {
    for (std::size_t i = 0; i < size; ++i) {
      const double x = weights[i];
      w[i] = (std::isfinite(x) && x > 0 ? x : w_min) / w_max;
    }
  }

  const double level = water_level(w, total, lo, hi);
  std::vector<int> out(size);
  std::vector<double> frac(size);
  std::int64_t left = total;
  for (std::size_t i = 0; i < size; ++i) {
    const double x = std::clamp(level * w[i], static_cast<double>(lo), static_cast<double>(hi));
    out[i] = static_cast<int>(std::floor(x));
    frac[i] = x - out[i];
    left -= out[i];
  }
  // left is in [0, n) up to rounding; the two-sided fix-up keeps sum == total regardless.
  const int step = left >= 0 ? 1 : -1;
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < size; ++i) {
    if (step > 0 ? out[i] < hi : out[i] > lo) order.push_back(i);
  }
  const auto want = static_cast<std::size_t>(left >= 0 ? left : -left);
  DBS_CHECK_LE(want, order.size());
  // Whether rank a takes the next +step before rank b.
  const auto first = [&](std::size_t a, std::size_t b) {
    if (rounding == Rounding::least_step_time) {
      const double ta = (out[a] + std::max(step, 0)) / w[a],
                   tb = (out[b] + std::max(step, 0)) / w[b];
      if (ta != tb) return step > 0 ? ta < tb : ta > tb;
    }
    if (frac[a] != frac[b]) return step > 0 ? frac[a] > frac[b] : frac[a] < frac[b];
    return step > 0 ? a < b : a > b;
  };
  std::nth_element(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(want), order.end(),
                   first);
  for (std::size_t k = 0; k < want; ++k) out[order[k]] += step;
  return out;
}

}  // namespace detail

std::unique_ptr<Policy> make_policy(const Settings& settings, int world) {
  detail::check_config(settings, world);
  switch (settings.policy.kind) {
    case PolicySpec::Kind::dbs:
      return detail::make_dbs(settings, world, true);
    case PolicySpec::Kind::dbs_rate:
      return detail::make_dbs(settings, world, false);
    case PolicySpec::Kind::equal_split:
      return detail::make_static(settings, world);
    case PolicySpec::Kind::fixed:
      return detail::make_fixed(settings, world);
  }
  DBS_CHECK(false);
  return nullptr;
}

std::vector<int> apportion(const std::vector<double>& weights, int total, int lo, int hi) {
  return detail::apportion(weights, total, lo, hi, detail::Rounding::largest_remainder);
}

double predicted_epoch_s(const std::vector<int>& batch, const std::vector<double>& v,
                         std::int64_t samples_per_epoch) {
  DBS_CHECK_EQ(batch.size(), v.size());
  const std::int64_t global = std::accumulate(batch.begin(), batch.end(), std::int64_t{0});
  if (samples_per_epoch <= 0 || global <= 0) return 0.0;
  double step_s = 0;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (batch[i] == 0) continue;
    if (!(v[i] > 0) || !std::isfinite(v[i])) return 0.0;
    step_s = std::max(step_s, batch[i] / v[i]);
  }
  const std::int64_t steps = (samples_per_epoch + global - 1) / global;
  return static_cast<double>(steps) * step_s;
}

}  // namespace dbs::policy
