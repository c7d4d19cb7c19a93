// The cost model t(b) = alpha + beta * b: points from steps, the fit (known alpha and beta
// recovered, degenerate cases), water-filling (sum exact, bounds, optimal against brute force)
// and the epoch-time predictions.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>
#include <vector>

#include "lib/common/error.h"
#include "lib/policy/cost.h"
#include "lib/policy/plan.h"

namespace {

using dbs::policy::Cost;
using dbs::CostPoint;

// Steps of a rank with cost c at the given batch sizes, each time multiplied by (1 + e),
// e uniform in [-jitter, jitter].
std::vector<std::pair<int, double>> steps_of(const Cost& c, const std::vector<int>& batches,
                                             double jitter, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> e(-jitter, jitter);
  std::vector<std::pair<int, double>> out;
  for (const int b : batches) out.emplace_back(b, c.at(b) * (1 + e(rng)));
  return out;
}

// The least max_i t_i(b_i) over every split of total between two ranks within [lo, hi].
double best_two(const std::vector<Cost>& c, int total, int lo, int hi) {
  double best = 1e300;
  for (int b0 = lo; b0 <= hi; ++b0) {
    const int b1 = total - b0;
    if (b1 < lo || b1 > hi) continue;
    best = std::min(best, std::max(c[0].at(b0), c[1].at(b1)));
  }
  return best;
}

}  // namespace

TEST_CASE("Cost.Points.TwoMostFrequentBatchSizesWithMeanAndSd") {
  const std::vector<std::pair<int, double>> steps = {
      {100, 1.0}, {100, 3.0}, {56, 0.5}, {0, 9.0}, {100, 2.0}, {7, 0.1}, {7, 0.3}};
  const auto p = dbs::policy::cost_points(steps);
  CHECK(p[0] == CostPoint{100, 3, 2.0, 1.0});
  CHECK(p[1].batch == 7);  // two steps beat the single step at 56
  CHECK(p[1].steps == 2);
  CHECK(p[1].mean_s == doctest::Approx(0.2));
  CHECK(p[1].sd_s == doctest::Approx(std::sqrt(0.02)));
  const auto none = dbs::policy::cost_points(std::vector<std::pair<int, double>>{{0, 1.0}});
  CHECK(none[0].batch == 0);
  CHECK(none[1].batch == 0);
}

TEST_CASE("Cost.Fit.RecoversKnownAlphaBetaFromSyntheticSteps") {
  for (const Cost truth : {Cost{0.030, 0.002}, Cost{0.0, 0.001}, Cost{0.2, 0.0005}}) {
    // A plan's full steps at 180 and the short last step at 79, with 1% jitter.
    std::vector<int> batches(23, 180);
    batches.push_back(79);
    for (int k = 0; k < 10; ++k) batches.push_back(120);  // an earlier plan
    const auto steps = steps_of(truth, batches, 0.01, 7);
    std::vector<CostPoint> points;
    for (const int b : {180, 79, 120}) {
      std::vector<std::pair<int, double>> at;
      for (const auto& s : steps)
        if (s.first == b) at.push_back(s);
      points.push_back(dbs::policy::cost_points(at)[0]);
    }
    const auto fit = dbs::policy::fit_cost(points);
    REQUIRE(fit);
    CHECK(fit->beta == doctest::Approx(truth.beta).epsilon(0.05));
    CHECK(fit->alpha == doctest::Approx(truth.alpha).epsilon(0.05).scale(0.01));
  }
}

TEST_CASE("Cost.Fit.ExactOnNoiselessPoints") {
  const Cost truth{0.05, 0.003};
  const std::vector<CostPoint> points = {{200, 20, truth.at(200), 0}, {56, 1, truth.at(56), 0}};
  const auto fit = dbs::policy::fit_cost(points);
  REQUIRE(fit);
  CHECK(fit->alpha == doctest::Approx(0.05));
  CHECK(fit->beta == doctest::Approx(0.003));
}

TEST_CASE("Cost.Fit.DegenerateCases") {
  SUBCASE("no points") {
    CHECK_FALSE(dbs::policy::fit_cost(std::vector<CostPoint>{}));
    CHECK_FALSE(dbs::policy::fit_cost(std::vector<CostPoint>{{0, 0, 0, 0}, {5, 0, 1, 0}}));
  }
  SUBCASE("one batch size only: proportional") {
    const auto fit = dbs::policy::fit_cost(std::vector<CostPoint>{{128, 10, 0.256, 0.01}});
    REQUIRE(fit);
    CHECK(fit->alpha == 0);
    CHECK(fit->beta == doctest::Approx(0.002));
  }
  SUBCASE("time falls with batch (noise): proportional through the mean point") {
    const auto fit =
        dbs::policy::fit_cost(std::vector<CostPoint>{{100, 10, 0.30, 0}, {110, 10, 0.29, 0}});
    REQUIRE(fit);
    CHECK(fit->alpha == 0);
    CHECK(fit->beta == doctest::Approx(0.59 / 210));
  }
  SUBCASE("negative alpha: through the origin") {
    // t = -0.1 + 0.002 b exactly: alpha < 0 is refitted with alpha = 0.
    const auto fit =
        dbs::policy::fit_cost(std::vector<CostPoint>{{100, 1, 0.1, 0}, {200, 1, 0.3, 0}});
    REQUIRE(fit);
    CHECK(fit->alpha == 0);
    CHECK(fit->beta == doctest::Approx((100 * 0.1 + 200 * 0.3) / (100.0 * 100 + 200.0 * 200)));
  }
  SUBCASE("zero times: no fit") {
    CHECK_FALSE(dbs::policy::fit_cost(std::vector<CostPoint>{{100, 3, 0.0, 0}}));
  }
}

TEST_CASE("Cost.WaterFill.SumExactBoundsAndOptimalAgainstBruteForce") {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> alpha(0.0, 0.2), beta(1e-4, 5e-3);
  std::uniform_int_distribution<int> total_d(2, 300);
  for (int k = 0; k < 2000; ++k) {
    const std::vector<Cost> c = {{alpha(rng), beta(rng)}, {alpha(rng), beta(rng)}};
    const int total = total_d(rng), lo = std::min(total / 2, k % 7 + 1),
              hi = std::max((total + 1) / 2, total - k % 13);
    const std::vector<int> b = dbs::policy::water_fill(c, total, lo, hi);
    REQUIRE(b.size() == 2);
    CHECK(b[0] + b[1] == total);
    CHECK(std::min(b[0], b[1]) >= lo);
    CHECK(std::max(b[0], b[1]) <= hi);
    CHECK(dbs::policy::step_time(c, b, 0) == doctest::Approx(best_two(c, total, lo, hi)));
  }
}

TEST_CASE("Cost.WaterFill.ManyRanksSumExactAndWithinOneSampleOfTheLevel") {
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> alpha(0.0, 0.1), beta(1e-4, 1e-2);
  for (const int n : {1, 3, 17, 1000}) {
    std::vector<Cost> c(static_cast<std::size_t>(n));
    for (Cost& x : c) x = {alpha(rng), beta(rng)};
    const int total = 64 * n + 7;
    const std::vector<int> b = dbs::policy::water_fill(c, total, 1, total);
    CHECK(std::accumulate(b.begin(), b.end(), 0) == total);
    CHECK(*std::min_element(b.begin(), b.end()) >= 1);
    // Moving one sample from the slowest step to any other rank cannot lower the maximum.
    const double t = dbs::policy::step_time(c, b, 0);
    for (std::size_t i = 0; i < c.size(); ++i) CHECK(c[i].at(b[i] + 1) >= t - 1e-12);
  }
}

TEST_CASE("Cost.WaterFill.LeftoverSamplesGoToTheLowerRanksAmongEqualCosts") {
  // 256 alike ranks: 40 samples each and 100 left over, one to each of ranks 0-99.
  const std::vector<Cost> alike(256, Cost{0.001, 0.002});
  const std::vector<int> b = dbs::policy::water_fill(alike, 256 * 40 + 100, 1, 256 * 41);
  for (std::size_t i = 0; i < b.size(); ++i) CHECK(b[i] == (i < 100 ? 41 : 40));
  // Four node types of 64 alike ranks: within a type, lower ranks hold at least as many samples
  // and at most one more, and no sample moved to another rank lowers the slowest step.
  std::vector<Cost> types;
  for (const double speed : {1.0, 0.75, 0.5, 0.25})
    for (int k = 0; k < 64; ++k) types.push_back({0.0005, 0.001 / speed});
  const int total = 256 * 40 + 37;
  const std::vector<int> t = dbs::policy::water_fill(types, total, 1, total);
  CHECK(std::accumulate(t.begin(), t.end(), 0) == total);
  for (std::size_t g = 0; g < 4; ++g) {
    const auto first = t.begin() + static_cast<std::ptrdiff_t>(64 * g);
    CHECK(std::is_sorted(first, first + 64, std::greater<>()));
    CHECK(*first - *(first + 63) <= 1);
  }
  const double slowest = dbs::policy::step_time(types, t, 0);
  for (std::size_t i = 0; i < types.size(); ++i) CHECK(types[i].at(t[i] + 1) >= slowest);
}

TEST_CASE("Cost.WaterFill.ZeroAlphaIsProportionalAndFixedCostsShiftTheSplit") {
  // alpha = 0: shares proportional to speed 1/beta (3:1).
  CHECK(dbs::policy::water_fill(std::vector<Cost>{{0, 0.001}, {0, 0.003}}, 256, 1, 256) ==
        std::vector<int>{192, 64});
  // Rank 1 pays 0.1 s per step whatever its batch: it gets less than its proportional 85.
  const std::vector<Cost> fixed = {{0.02, 0.001}, {0.1, 0.002}};
  const auto b = dbs::policy::water_fill(fixed, 256, 1, 256);
  CHECK(b[1] < 60);
  CHECK(dbs::policy::step_time(fixed, b, 0) == doctest::Approx(best_two(fixed, 256, 1, 256)));
  // Bounds bind: rank 1 would want fewer than 40.
  CHECK(dbs::policy::water_fill(std::vector<Cost>{{0, 0.001}, {0.5, 0.003}}, 256, 40, 256) ==
        std::vector<int>{216, 40});
}

TEST_CASE("Cost.WaterFill.RejectsBadCostsAndInfeasibleBounds") {
  CHECK_THROWS_AS(dbs::policy::water_fill(std::vector<Cost>{{0, 0}}, 10, 1, 10), dbs::ConfigError);
  CHECK_THROWS_AS(dbs::policy::water_fill(std::vector<Cost>{{-1, 1}}, 10, 1, 10), dbs::ConfigError);
  CHECK_THROWS_AS(dbs::policy::water_fill(std::vector<Cost>{{0, 1}, {0, 1}}, 10, 6, 10),
                  dbs::ConfigError);
  CHECK_THROWS_AS(dbs::policy::water_fill(std::vector<Cost>{}, 10, 1, 10), dbs::ConfigError);
}

TEST_CASE("Cost.EpochTime.FullStepsShortLastStepAndAllreduce") {
  const std::vector<Cost> c = {{0.01, 0.001}, {0.05, 0.002}};
  dbs::Plan plan;
  plan.global_batch = 256;
  plan.batch = {192, 64};
  plan.offset = dbs::offsets_of(plan.batch);
  // 6000 samples: 23 full steps and a last step of 112 split 84/28 (the plan's 3:1).
  const double full = std::max(0.01 + 0.192, 0.05 + 0.128) + 0.004;
  const double last = std::max(0.01 + 0.084, 0.05 + 0.056) + 0.004;
  CHECK(dbs::policy::epoch_time(c, plan, 6000, 0.004) == doctest::Approx(23 * full + last));
  CHECK(dbs::policy::epoch_time(c, plan, 0, 0.004) == 0);
  // Ideal: equal step time T with (T - 0.01) / 0.001 + (T - 0.05) / 0.002 = g.
  const auto level = [](double g) { return (g + 10 + 25) / 1500.0; };
  CHECK(dbs::policy::ideal_epoch_time(c, 256, 6000, 0.004) ==
        doctest::Approx(23 * (level(256) + 0.004) + level(112) + 0.004));
}

// The exchange: the least comm_s per exchange of any rank (the last to arrive hardly waits), an
// averaging epoch's exchanges being its averages; an epoch's share counts the exchanges of the
// planned epoch, ceil(S / H) of them once averaging starts.
TEST_CASE("Cost.Exchange.LeastPerExchangeAndTheEpochsShare") {
  dbs::Settings s;
  s.global_batch = 256;
  s.samples_per_epoch = 6000;  // S = 24 steps
  std::vector<dbs::Report> r(2);
  for (int i = 0; i < 2; ++i) {
    r[static_cast<std::size_t>(i)].rank = i;
    r[static_cast<std::size_t>(i)].steps = 24;
  }
  r[0].comm_s = 12.0;  // waited as well
  r[1].comm_s = 4.8;   // 0.2 s per allreduce
  CHECK(dbs::policy::exchange_s(s, r) == doctest::Approx(0.2));
  CHECK(dbs::policy::exchange_epoch_s(s, 1, 0.2) == doctest::Approx(24 * 0.2));
  CHECK(dbs::policy::exchange_step_s(s, 1, 0.2) == doctest::Approx(0.2));
  s.average_every = 8;
  s.average_after_epochs = 1;
  CHECK(dbs::policy::exchange_s(s, r) == doctest::Approx(0.2));  // epoch 0: synchronous
  r[0].epoch = r[1].epoch = 1;  // an averaging epoch: 3 averages
  CHECK(dbs::policy::exchange_s(s, r) == doctest::Approx(1.6));
  CHECK(dbs::policy::exchange_epoch_s(s, 0, 0.2) == doctest::Approx(24 * 0.2));
  CHECK(dbs::policy::exchange_epoch_s(s, 1, 0.2) == doctest::Approx(3 * 0.2));
  CHECK(dbs::policy::exchange_step_s(s, 1, 0.2) == doctest::Approx(0.2 / 8));
  s.samples_per_epoch = 0;  // N unknown: no epoch's share, a step's per period
  CHECK(dbs::policy::exchange_epoch_s(s, 1, 0.2) == 0);
  CHECK(dbs::policy::exchange_step_s(s, 1, 0.2) == doctest::Approx(0.2 / 8));
  CHECK(dbs::policy::exchange_s(s, std::vector<dbs::Report>(2)) == 0);  // no steps
}
