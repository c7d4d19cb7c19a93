// The ideal epoch time (lib/policy/ideal.h) and the policy's weighted median of step rates,
// which is stats::median over the rates counted with their weights.
#include "lib/policy/ideal.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "lib/common/stats.h"
#include "lib/policy/steps.h"

using namespace dbs;

TEST_CASE("Policy.IdealTime.SamplesOverSummedThroughput") {
  CHECK(policy::ideal_time(std::vector<double>{100, 300}, 1000) == 2.5);
  CHECK(policy::ideal_time(std::vector<double>{0, 200}, 400) == 2.0);  // unmeasured adds nothing
  CHECK(policy::ideal_time(std::vector<double>{}, 400) == 0.0);
  CHECK(policy::ideal_time(std::vector<double>{0, 0}, 400) == 0.0);
}

TEST_CASE("Policy.MedianRate.IsStatsMedianOfTheCountedRates") {
  const std::vector<std::vector<std::pair<double, std::int64_t>>> cases = {
      {{3, 1}, {1, 2}, {2, 1}}, {{5, 1}}, {{2, 1}, {4, 1}}, {{9, 3}, {1, 1}, {4, 2}}, {}};
  for (const auto& rates : cases) {
    std::vector<double> each;
    for (const auto& [rate, count] : rates) each.insert(each.end(), static_cast<std::size_t>(count), rate);
    CHECK(policy::median_rate(rates) == stats::median(each));
  }
}
