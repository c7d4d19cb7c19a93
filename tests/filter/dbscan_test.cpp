// DBSCAN: the grid version equals the O(n²) reference (ties at exactly eps, duplicates, border
// points between clusters), the k-distance search equals brute force, and the knee.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "lib/common/error.h"
#include "lib/filter/dbscan.h"

using namespace dbs::filter;

namespace {

using Dbscan = DbscanResult (*)(const double*, std::size_t, double, int);

void check_equal(const DbscanResult& a, const DbscanResult& b) {
  REQUIRE(a.label.size() == b.label.size());
  CHECK(a.clusters == b.clusters);
  for (std::size_t i = 0; i < a.label.size(); ++i) {
    CAPTURE(i);
    CHECK(a.label[i] == b.label[i]);
    CHECK(a.core[i] == b.core[i]);
  }
}

}  // namespace

TEST_CASE("Dbscan.Grid.EqualsReference.IntegerPointsWithTies") {
  // Integer coordinates in a small box: many pairs exactly eps apart, many duplicates.
  std::mt19937 rng(1);
  for (int trial = 0; trial < 40; ++trial) {
    CAPTURE(trial);
    const std::size_t n = 50 + rng() % 400;
    const int box = 5 + static_cast<int>(rng() % 40);
    std::vector<double> xy(2 * n);
    for (auto& v : xy) v = static_cast<double>(static_cast<int>(rng() % box) - box / 2);
    for (const double eps : {1.0, 2.0, 2.5, 5.0}) {
      for (const int min_samples : {1, 2, 3, 4, 6, 10}) {
        CAPTURE(eps);
        CAPTURE(min_samples);
        const auto fast = dbscan(xy.data(), n, eps, min_samples);
        const auto ref = dbscan_reference(xy.data(), n, eps, min_samples);
        check_equal(fast, ref);
      }
    }
  }
}

TEST_CASE("Dbscan.Grid.EqualsReference.ContinuousClusters") {
  std::mt19937 rng(2);
  std::normal_distribution<double> g(0.0, 1.0);
  std::uniform_real_distribution<double> u(-30.0, 30.0);
  for (int trial = 0; trial < 20; ++trial) {
    const std::size_t n = 1000;
    std::vector<double> xy(2 * n);
    for (std::size_t i = 0; i < n; ++i) {
      const double cx = 10.0 * static_cast<double>(i % 4), cy = 7.0 * static_cast<double>(i % 3);
      const bool uniform = i % 10 == 0;  // a tenth scattered noise
      xy[2 * i] = uniform ? u(rng) : cx + g(rng);
      xy[2 * i + 1] = uniform ? u(rng) : cy + g(rng);
    }
    for (const double eps : {0.3, 0.8, 1.5})
      for (const int min_samples : {3, 5, 12}) check_equal(dbscan(xy.data(), n, eps, min_samples),
                                                           dbscan_reference(xy.data(), n, eps, min_samples));
  }
}

TEST_CASE("Dbscan.BorderPoint.JoinsLowestIndexCore") {
  // eps 1, min_samples 4. Cores at x = 1, 1.25, ..., 2 and at x = -1, ..., -2 (5 each, every one
  // with 5 or 6 points within 1); the last point, at x = 0, is exactly 1 from x = 1 and x = -1
  // (a tie at eps) and has 3 points within eps: a border point of both clusters.
  auto layout = [](double first_side) {
    std::vector<double> xy;
    for (const double side : {first_side, -first_side})
      for (int t = 0; t < 5; ++t) xy.insert(xy.end(), {side * (1.0 + 0.25 * t), 0.0});
    xy.insert(xy.end(), {0.0, 0.0});
    return xy;
  };
  const std::size_t n = 11;
  for (const double side : {1.0, -1.0}) {
    const auto xy = layout(side);
    for (const Dbscan f : {&dbscan, &dbscan_reference}) {
      const DbscanResult r = f(xy.data(), n, 1.0, 4);
      CHECK(r.clusters == 2);
      for (std::size_t i = 0; i < 10; ++i) CHECK(r.core[i]);
      CHECK_FALSE(r.core[10]);
      CHECK(r.label[0] == 0);
      CHECK(r.label[5] == 1);
      CHECK(r.label[10] == 0);  // core 0 has a lower index than core 5
    }
    CHECK(dbscan(xy.data(), n, 0.99, 4).label[10] == kNoise);
  }
}

TEST_CASE("Dbscan.RejectsBadParameters") {
  const std::vector<double> xy = {0, 0, 1, 1};
  CHECK_THROWS_AS(dbscan(xy.data(), 2, 0.0, 3), dbs::ConfigError);
  CHECK_THROWS_AS(dbscan(xy.data(), 2, 1.0, 0), dbs::ConfigError);
  CHECK_THROWS_AS(dbscan(xy.data(), 2, std::nan(""), 3), dbs::ConfigError);
  const std::vector<double> bad = {0, 0, std::nan(""), 1};
  CHECK_THROWS_AS(dbscan(bad.data(), 2, 1.0, 3), dbs::InputError);
}

TEST_CASE("Dbscan.KthNeighbourDistance.MatchesBruteForce") {
  std::mt19937 rng(3);
  std::normal_distribution<double> g(0.0, 1.0);
  const std::size_t n = 700;
  std::vector<double> xy(2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    const double s = i % 7 == 0 ? 40.0 : 1.0;  // some far outliers
    xy[2 * i] = s * g(rng);
    xy[2 * i + 1] = s * g(rng) + (i % 2 ? 5.0 : 0.0);
  }
  xy[2] = xy[0], xy[3] = xy[1];  // a duplicate
  for (const int k : {1, 4, 9}) {
    const auto fast = kth_neighbour_distance(xy.data(), n, k);
    for (std::size_t i = 0; i < n; ++i) {
      std::vector<double> d;
      for (std::size_t j = 0; j < n; ++j)
        if (j != i) d.push_back(std::hypot(xy[2 * i] - xy[2 * j], xy[2 * i + 1] - xy[2 * j + 1]));
      std::nth_element(d.begin(), d.begin() + (k - 1), d.end());
      CHECK(fast[i] == doctest::Approx(d[static_cast<std::size_t>(k - 1)]).epsilon(1e-12));
    }
  }
}

TEST_CASE("Dbscan.Knee.FindsTheBend") {
  // 90 values rising slowly to 1, then 10 rising steeply to 50: the knee is near 1.
  std::vector<double> v;
  for (int i = 0; i < 90; ++i) v.push_back(0.5 + i / 180.0);
  for (int i = 0; i < 10; ++i) v.push_back(5.0 + 5.0 * i);
  std::shuffle(v.begin(), v.end(), std::mt19937(4));
  const double k = knee(v);
  CHECK(k >= 0.9);
  CHECK(k <= 5.0);
  CHECK(knee({3.0, 3.0, 3.0}) == 3.0);
}
