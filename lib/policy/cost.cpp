#include "lib/policy/cost.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "lib/common/error.h"
#include "lib/common/format.h"
#include "lib/policy/steps.h"

namespace dbs::policy {
namespace {

// The level T with sum_i clamp((T - alpha_i) / beta_i, lo, hi) == total, for n * lo <= total
// <= n * hi: the sum rises continuously and monotonically in T, so bisection between the
// level where every rank is at lo and the one where every rank is at hi converges; 200 halvings
// reach the spacing of doubles.
double level(std::span<const Cost> costs, double total, double lo, double hi) {
  const auto filled = [&](double t) {
    double sum = 0;
    for (const Cost& c : costs) sum += std::clamp((t - c.alpha) / c.beta, lo, hi);
    return sum;
  };
  double a = costs[0].at(lo), b = costs[0].at(hi);
  for (const Cost& c : costs) {
    a = std::min(a, c.at(lo));
    b = std::max(b, c.at(hi));
  }
  for (int k = 0; k < 200 && a < b; ++k) {
    const double m = 0.5 * (a + b);
    if (m <= a || m >= b) break;
    (filled(m) < total ? a : b) = m;
  }
  return b;
}

void check_costs(std::span<const Cost> costs) {
  if (costs.empty()) throw ConfigError("water_fill: no ranks");
  for (std::size_t i = 0; i < costs.size(); ++i) {
    const Cost& c = costs[i];
    if (!(c.beta > 0) || !std::isfinite(c.beta) || !(c.alpha >= 0) || !std::isfinite(c.alpha))
      throw ConfigError(
          format("water_fill: rank %zu has alpha %g s, beta %g s/sample (need "
                 "alpha >= 0, beta > 0, finite)",
                 i, c.alpha, c.beta));
  }
}

}  // namespace

std::array<CostPoint, 2> cost_points(std::span<const std::pair<int, double>> steps) {
  struct Sum {
    std::int64_t n = 0;
    double t = 0, tt = 0;
  };
  std::map<int, Sum> by_batch;
  for (const auto& [b, t] : steps) {
    if (b <= 0) continue;
    Sum& s = by_batch[b];
    ++s.n;
    s.t += t;
    s.tt += t * t;
  }
  std::vector<std::pair<std::int64_t, int>> order;  // (steps, batch), most first
  for (const auto& [b, s] : by_batch) order.emplace_back(s.n, b);
  std::sort(order.begin(), order.end(), std::greater<>());
  std::array<CostPoint, 2> out{};
  for (std::size_t k = 0; k < std::min(order.size(), out.size()); ++k) {
    const int b = order[k].second;
    const Sum& s = by_batch[b];
    const double n = static_cast<double>(s.n), mean = s.t / n;
    const double var = s.n > 1 ? std::max(0.0, (s.tt - n * mean * mean) / (n - 1)) : 0.0;
    out[k] = {b, s.n, mean, std::sqrt(var)};
  }
  return out;
}

std::optional<Cost> fit_samples(std::span<const Sample> samples) {
  double sw = 0, sb = 0, st = 0, sbb = 0, sbt = 0;
  double first = 0;
  bool several = false;
  for (const Sample& p : samples) {
    if (!(p.batch > 0) || !(p.weight > 0) || !std::isfinite(p.mean_s) || p.mean_s < 0) continue;
    const double w = p.weight, b = p.batch, t = p.mean_s;
    if (first == 0) first = b;
    several = several || b != first;
    sw += w;
    sb += w * b;
    st += w * t;
    sbb += w * b * b;
    sbt += w * b * t;
  }
  if (sw == 0 || st <= 0) return std::nullopt;
  const Cost proportional{0.0, st / sb};
  if (!several) return proportional;
  const double mb = sb / sw, mt = st / sw;
  const double var_b = sbb / sw - mb * mb, cov = sbt / sw - mb * mt;
  if (!(var_b > 0)) return proportional;
  const double beta = cov / var_b;
  if (!(beta > 0) || !std::isfinite(beta)) return proportional;
  const double alpha = mt - beta * mb;
  if (alpha < 0) return Cost{0.0, sbt / sbb};
  return Cost{alpha, beta};
}

std::optional<Cost> fit_cost(std::span<const CostPoint> points) {
  std::vector<Sample> samples;
  for (const CostPoint& p : points)
    if (p.steps > 0)
      samples.push_back({static_cast<double>(p.batch), static_cast<double>(p.steps), p.mean_s});
  return fit_samples(samples);
}

std::vector<int> water_fill(std::span<const Cost> costs, int total, int lo, int hi) {
  check_costs(costs);
  const auto n = static_cast<std::int64_t>(costs.size());
  if (lo < 0 || hi < lo || n * lo > total || total > n * hi)
    throw ConfigError(format("water_fill: %lld ranks with [%d, %d] each cannot share %d",
                             static_cast<long long>(n), lo, hi, total));
  const double t = level(costs, total, lo, hi);
  std::vector<int> out(costs.size());
  std::int64_t left = total;
  for (std::size_t i = 0; i < costs.size(); ++i) {
    const double x = std::clamp((t - costs[i].alpha) / costs[i].beta, static_cast<double>(lo),
                                static_cast<double>(hi));
    out[i] = static_cast<int>(std::floor(x));
    left -= out[i];
  }
  // left is in [0, n) up to rounding in the level; either sign is fixed up exactly, one sample at
  // a time: to the rank whose next step time is least (ties: lower rank), or from the one whose
  // step time is greatest (ties: higher rank). Each rank's next step time waits in a heap, so a
  // plan of many ranks costs n log n, not n per sample.
  using Next = std::pair<double, std::size_t>;  // (step time, rank)
  std::vector<Next> heap;
  if (left > 0) {
    for (std::size_t i = 0; i < costs.size(); ++i)
      if (out[i] < hi) heap.emplace_back(costs[i].at(out[i] + 1), i);
    std::make_heap(heap.begin(), heap.end(), std::greater<>());
  } else if (left < 0) {
    for (std::size_t i = 0; i < costs.size(); ++i)
      if (out[i] > lo) heap.emplace_back(costs[i].at(out[i]), i);
    std::make_heap(heap.begin(), heap.end(), std::less<>());
  }
  for (; left > 0; --left) {
    DBS_CHECK(!heap.empty());
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    const std::size_t best = heap.back().second;
    heap.pop_back();
    if (++out[best] < hi) {
      heap.emplace_back(costs[best].at(out[best] + 1), best);
      std::push_heap(heap.begin(), heap.end(), std::greater<>());
    }
  }
  for (; left < 0; ++left) {
    DBS_CHECK(!heap.empty());
    std::pop_heap(heap.begin(), heap.end(), std::less<>());
    const std::size_t worst = heap.back().second;
    heap.pop_back();
    if (--out[worst] > lo) {
      heap.emplace_back(costs[worst].at(out[worst]), worst);
      std::push_heap(heap.begin(), heap.end(), std::less<>());
    }
  }
  return out;
}

double exchange_s(const Settings& settings, std::span<const Report> reports) {
  double least = -1;
  for (const Report& r : reports) {
    if (r.steps <= 0) continue;
    const double x = r.comm_s / static_cast<double>(settings.exchanges(r.epoch, r.steps));
    least = least < 0 ? x : std::min(least, x);
  }
  return std::max(least, 0.0);
}

namespace {

// The steps an epoch's exchanges are counted over: S, or where N is unknown one period.
std::int64_t exchange_steps(const Settings& s) {
  const std::int64_t B = std::max(s.global_batch, 1);
  if (s.samples_per_epoch > 0) return (s.samples_per_epoch + B - 1) / B;
  return std::max(s.average_every, 1);
}

}  // namespace

double exchange_epoch_s(const Settings& settings, std::int64_t epoch, double per_exchange) {
  if (settings.samples_per_epoch <= 0) return 0.0;
  return static_cast<double>(settings.exchanges(epoch, exchange_steps(settings))) * per_exchange;
}

double exchange_step_s(const Settings& settings, std::int64_t epoch, double per_exchange) {
  const std::int64_t steps = exchange_steps(settings);
  return static_cast<double>(settings.exchanges(epoch, steps)) * per_exchange /
         static_cast<double>(steps);
}

double step_time(std::span<const Cost> costs, const std::vector<int>& batch, double comm_s) {
  DBS_CHECK_EQ(costs.size(), batch.size());
  double t = 0;
  for (std::size_t i = 0; i < costs.size(); ++i) t = std::max(t, costs[i].at(batch[i]));
  return t + comm_s;
}

double epoch_time(std::span<const Cost> costs, const Plan& plan, std::int64_t samples,
                  double comm_s) {
  const std::int64_t B = plan.global_batch;
  if (samples <= 0 || B <= 0) return 0.0;
  const std::int64_t steps = (samples + B - 1) / B;
  const int last = static_cast<int>(samples - (steps - 1) * B);
  return static_cast<double>(steps - 1) * step_time(costs, plan.batch, comm_s) +
         step_time(costs, step_batch(plan, last), comm_s);
}

double ideal_epoch_time(std::span<const Cost> costs, int global_batch, std::int64_t samples,
                        double comm_s) {
  if (samples <= 0 || global_batch <= 0 || costs.empty()) return 0.0;
  check_costs(costs);
  const std::int64_t steps = (samples + global_batch - 1) / global_batch;
  const double last = static_cast<double>(samples - (steps - 1) * global_batch);
  const auto one = [&](double g) { return level(costs, g, 0.0, g) + comm_s; };
  return static_cast<double>(steps - 1) * one(global_batch) + one(last);
}

}  // namespace dbs::policy
