// apportion, offsets_of and predicted_epoch_s: invariants over seeded random cases against a
// bisection reference, tie-breaks, bounds, and the rejections' exact messages.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "lib/common/error.h"
#include "lib/policy/policy.h"
#include "tests/policy/cases.h"

namespace {

using dbs::ConfigError;
using dbs::policy::apportion;
using dbs::policy::test::Case;
using dbs::policy::test::random_case;
using dbs::policy::test::water_filled;

}  // namespace

TEST_CASE("Plan.OffsetsArePrefixSums") {
  CHECK(dbs::offsets_of({}).empty());
  CHECK(dbs::offsets_of({5}) == std::vector<int>{0});
  CHECK(dbs::offsets_of({3, 1, 4}) == std::vector<int>{0, 3, 4});
}

TEST_CASE("Apportion.Property.SumBoundsAndWaterFilledShareWithinOne") {
  std::mt19937 rng(11);
  for (int k = 0; k < 300; ++k) {
    const Case c = random_case(rng, k);
    CAPTURE(k);
    CAPTURE(c.world);
    CAPTURE(c.global_batch);
    const std::vector<int> b = apportion(c.v, c.global_batch, c.lo, c.upper());
    REQUIRE(b.size() == c.v.size());
    CHECK(std::accumulate(b.begin(), b.end(), std::int64_t{0}) == c.global_batch);
    const std::vector<double> x = water_filled(c.v, c.global_batch, c.lo, c.upper());
    double worst = 0;
    for (std::size_t i = 0; i < b.size(); ++i) {
      CHECK(b[i] >= c.lo);
      CHECK(b[i] <= c.upper());
      worst = std::max(worst, std::abs(b[i] - x[i]));
    }
    CHECK(worst < 1.0 + 1e-6);
  }
}

TEST_CASE("Apportion.Property.ProportionalWhenNoBoundBinds") {
  std::mt19937 rng(12);
  int tested = 0;
  for (int k = 0; k < 400; ++k) {
    Case c = random_case(rng, 2 * k);  // unbounded cases
    const double sum = std::accumulate(c.v.begin(), c.v.end(), 0.0);
    const std::vector<int> b = apportion(c.v, c.global_batch, 1, c.global_batch);
    bool binds = false;
    for (const double v : c.v) binds = binds || c.global_batch * v / sum <= 1.0;
    if (binds) continue;
    ++tested;
    for (std::size_t i = 0; i < b.size(); ++i) {
      CHECK(std::abs(b[i] - c.global_batch * c.v[i] / sum) <= 1.0);
    }
  }
  CHECK(tested > 50);
}

TEST_CASE("Apportion.Property.MonotoneInWeight") {
  std::mt19937 rng(13);
  for (int k = 0; k < 300; ++k) {
    const Case c = random_case(rng, k);
    const std::vector<int> b = apportion(c.v, c.global_batch, c.lo, c.upper());
    std::vector<std::size_t> order(b.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::sort(order.begin(), order.end(),
              [&](std::size_t i, std::size_t j) { return c.v[i] < c.v[j]; });
    int most_of_slower = 0;
    for (const std::size_t i : order) {
      CHECK(b[i] >= most_of_slower - 1);  // faster never gets fewer, up to rounding by 1
      most_of_slower = std::max(most_of_slower, b[i]);
    }
  }
}

TEST_CASE("Apportion.LargestRemainderTieBreaksToLowerRank") {
  CHECK(apportion({1, 1, 1}, 4, 1, 4) == std::vector<int>{2, 1, 1});
  CHECK(apportion({1, 1, 1}, 5, 1, 4) == std::vector<int>{2, 2, 1});
  CHECK(apportion({1, 2, 1}, 5, 1, 4) == std::vector<int>{1, 3, 1});  // shares 1.25, 2.5, 1.25
  CHECK(apportion({3, 1}, 128, 1, 128) == std::vector<int>{96, 32});
}

TEST_CASE("Apportion.BoundsWaterFill") {
  // Share of rank 0 would be 90 of 100; capped at 50, the rest splits 1 : 1 over the others.
  CHECK(apportion({9, 0.5, 0.5}, 100, 1, 50) == std::vector<int>{50, 25, 25});
  // Floors: rank 2 would get 1, the floor 10 is taken from the others in proportion.
  CHECK(apportion({1, 1, 0.02}, 100, 10, 100) == std::vector<int>{45, 45, 10});
  CHECK(apportion({1, 2}, 0, 0, 0) == std::vector<int>{0, 0});
}

TEST_CASE("Apportion.InvalidWeightsCountAsSmallest") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(apportion({4, 0, 2, -1, nan}, 50, 1, 50) == apportion({4, 2, 2, 2, 2}, 50, 1, 50));
  CHECK(apportion({0, 0, 0}, 7, 1, 7) == std::vector<int>{3, 2, 2});
}

TEST_CASE("Apportion.InfeasibleBoundsThrow") {
  CHECK_THROWS_WITH_AS(apportion({1, 1, 1, 1}, 40, 1, 8),
                       "apportion: 4 ranks with [1, 8] each cannot share 40 (feasible 4..32)",
                       ConfigError);
  CHECK_THROWS_WITH_AS(apportion({1, 1}, 1, 1, 8),
                       "apportion: 2 ranks with [1, 8] each cannot share 1 (feasible 2..16)",
                       ConfigError);
  CHECK_THROWS_WITH_AS(apportion({}, 1, 1, 8), "apportion: no ranks to share 1", ConfigError);
  CHECK_THROWS_WITH_AS(apportion({1}, 1, 3, 2), "apportion: bounds [3, 2] are invalid",
                       ConfigError);
}

TEST_CASE("PredictedEpoch.StepsTimesSlowestStep") {
  // ceil(1000 / 128) = 8 steps; rank 1 needs 64 / 32 = 2 s per step.
  CHECK(dbs::policy::predicted_epoch_s({64, 64}, {64, 32}, 1000) == doctest::Approx(16.0));
  CHECK(dbs::policy::predicted_epoch_s({64, 64}, {64, 0}, 1000) == 0.0);
  CHECK(dbs::policy::predicted_epoch_s({64, 64}, {64, 32}, 0) == 0.0);
}
