// Shared helpers of the policy tests: configs, simulated reports, random feasible cases, and an
// independent reference for the water-filled shares.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "lib/policy/policy.h"

namespace dbs::policy::test {

constexpr std::int64_t kN = 60000;  // samples per epoch

// The settings of a job of `world` ranks, and make_policy over them with a policy spec.
struct JobSettings : Settings {
  int world = 1;
};

inline std::unique_ptr<Policy> make_policy(const std::string& spec, JobSettings job) {
  job.policy = dbs::parse_policy(spec);
  return policy::make_policy(job, job.world);
}

inline JobSettings config(int world, int global_batch, int lo = 1, int hi = 0) {
  JobSettings c;
  c.world = world;
  c.global_batch = global_batch;
  c.samples_per_epoch = kN;
  c.min_batch = lo;
  c.max_batch = hi;
  return c;
}

// What ranks of speeds v (samples/s) report after an epoch under plan: rank `stalled` (-1 =
// none) lost stall_s extra seconds; the per-step median is sent only when with_median.
inline std::vector<Report> reports(const Plan& plan, const std::vector<double>& v, bool with_median,
                                   int stalled = -1, double stall_s = 0) {
  const std::int64_t steps = (kN + plan.global_batch - 1) / plan.global_batch;
  std::vector<Report> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    Report& r = out[i];
    r.rank = static_cast<int>(i);
    r.epoch = plan.epoch;
    r.batch = plan.batch[i];
    r.steps = steps;
    r.samples = steps * plan.batch[i];
    r.compute_s = static_cast<double>(r.samples) / v[i];
    if (r.rank == stalled) r.compute_s += stall_s;
    r.step_rate_median = with_median ? v[i] : 0.0;
  }
  return out;
}

struct Case {
  int world = 1;
  int global_batch = 1;
  int lo = 1;
  int hi = 0;             // 0 = global batch
  std::vector<double> v;  // samples/s, spread up to 100x

  int upper() const { return hi == 0 ? global_batch : hi; }
  JobSettings config() const { return test::config(world, global_batch, lo, hi); }
};

// Case k of a seeded series: world 1, 2, 3 or 1024 in half of them, else 1..1024; global batch
// log-uniform in [world, 65536]; odd k get random feasible bounds, even k none.
inline Case random_case(std::mt19937& rng, int k) {
  const int special[] = {1, 2, 3, 1024};
  Case c;
  c.world = k % 8 < 4 ? special[k % 4] : std::uniform_int_distribution<int>(1, 1024)(rng);
  std::uniform_real_distribution<double> ratio(0, std::log(65536.0 / c.world));
  c.global_batch = std::min(65536, static_cast<int>(c.world * std::exp(ratio(rng))));
  if (k % 2 == 1) {
    const int even_floor = c.global_batch / c.world;
    const int even_ceil = (c.global_batch + c.world - 1) / c.world;
    c.lo = std::uniform_int_distribution<int>(1, std::max(1, even_floor))(rng);
    c.hi = std::uniform_int_distribution<int>(even_ceil, c.global_batch)(rng);
  }
  const double spread = std::exp(std::uniform_real_distribution<double>(0, std::log(100.0))(rng));
  std::uniform_real_distribution<double> u(0, std::log(spread));
  for (int i = 0; i < c.world; ++i) c.v.push_back(100 * std::exp(u(rng)));
  return c;
}

inline void check_invariants(const Plan& p, const Case& c) {
  REQUIRE(p.world() == c.world);
  CHECK(p.global_batch == c.global_batch);  // so steps = ceil(N / B) cannot change
  CHECK(std::accumulate(p.batch.begin(), p.batch.end(), 0) == c.global_batch);
  CHECK(*std::min_element(p.batch.begin(), p.batch.end()) >= c.lo);
  CHECK(*std::max_element(p.batch.begin(), p.batch.end()) <= c.upper());
  CHECK(p.offset == offsets_of(p.batch));
}

// Reference shares by bisection on the water level L: x_i = clamp(L v_i, lo, hi), sum = total.
inline std::vector<double> water_filled(const std::vector<double>& v, int total, int lo, int hi) {
  const auto share = [&](double level, double w) {
    return std::clamp(level * w, static_cast<double>(lo), static_cast<double>(hi));
  };
  const auto sum_at = [&](double level) {
    double s = 0;
    for (const double w : v) s += share(level, w);
    return s;
  };
  double a = 0, b = 1;
  while (sum_at(b) < total) b *= 2;
  for (int k = 0; k < 200; ++k) (sum_at((a + b) / 2) < total ? a : b) = (a + b) / 2;
  std::vector<double> x;
  for (const double w : v) x.push_back(share(b, w));
  return x;
}

// Runs policy with the true speeds v from its initial plan until a plan is kept (<= 4 epochs).
inline Plan converge(Policy& policy, const std::vector<double>& v, bool with_median) {
  Plan p = policy.initial();
  for (int e = 0; e < 4; ++e) {
    p = policy.next(p, reports(p, v, with_median));
    if (!p.changed) break;
  }
  return p;
}

}  // namespace dbs::policy::test
