// lib/common/stats.h: the one median (upper median) and the nearest-rank quantile.
#include <doctest/doctest.h>

#include <vector>

#include "lib/common/stats.h"

using namespace dbs;

TEST_CASE("Stats.Median.UpperMiddleOfTheSortedValues") {
  CHECK(stats::median({}) == 0.0);
  CHECK(stats::median({4.0}) == 4.0);
  CHECK(stats::median({3.0, 1.0, 2.0}) == 2.0);
  CHECK(stats::median({4.0, 1.0, 3.0, 2.0}) == 3.0);  // the larger middle value, not 2.5
  CHECK(stats::median({5.0, 5.0, 1.0, 9.0}) == 5.0);
}

TEST_CASE("Stats.Quantile.NearestRank") {
  const std::vector<double> v = {10, 0, 30, 20, 40};  // sorted: 0 10 20 30 40
  CHECK(stats::quantile(v, 0.0) == 0.0);
  CHECK(stats::quantile(v, 0.1) == 0.0);   // index round(0.4) = 0
  CHECK(stats::quantile(v, 0.9) == 40.0);  // index round(3.6) = 4
  CHECK(stats::quantile(v, 1.0) == 40.0);
  CHECK(stats::quantile({}, 0.5) == 0.0);
}

TEST_CASE("Stats.Quantile.HalfIsTheMedian") {
  for (const std::vector<double>& v :
       {std::vector<double>{1}, {2, 1}, {3, 1, 2}, {4, 1, 3, 2}, {7, 7, 1, 2, 9, 4}}) {
    CHECK(stats::quantile(v, 0.5) == stats::median(v));
  }
}
