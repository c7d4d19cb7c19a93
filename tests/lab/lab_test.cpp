// The lab's own units: the sweep's fit is the policy's least squares.
#include <doctest/doctest.h>

#include <vector>

#include "lab/sweep.h"
#include "lib/common/error.h"
#include "lib/policy/cost.h"

using namespace dbs;

namespace {

lab::Cell cell(int ranks, int batch, double epoch_s) {
  lab::Cell c;
  c.ranks = ranks;
  c.global_batch = batch;
  c.epoch_s_median = epoch_s;
  c.params = 1000;
  return c;
}

// The per-step samples of the 1-rank cells, as the sweep sees them (epoch of n samples).
std::vector<policy::Sample> steps_of(const std::vector<lab::Cell>& cells, int n) {
  std::vector<policy::Sample> out;
  for (const lab::Cell& c : cells)
    if (c.ranks == 1)
      out.push_back({static_cast<double>(c.global_batch), 1.0,
                     c.epoch_s_median / ((n + c.global_batch - 1) / c.global_batch)});
  return out;
}

}  // namespace

TEST_CASE("Lab.Sweep.FitIsThePolicysLeastSquares") {
  const int n = 1024;
  // alpha > 0; alpha < 0 (the line through the origin); one batch size (proportional).
  for (const std::vector<lab::Cell>& cells :
       {std::vector<lab::Cell>{cell(1, 64, 16 * 0.02), cell(1, 256, 4 * 0.05)},
        std::vector<lab::Cell>{cell(1, 64, 16 * 0.004), cell(1, 128, 8 * 0.01), cell(1, 256, 4 * 0.03)},
        std::vector<lab::Cell>{cell(1, 128, 8 * 0.01)}}) {
    const lab::Fit fit = lab::fit_cells(cells, n, 20e-6);
    const auto want = policy::fit_samples(steps_of(cells, n));
    REQUIRE(want.has_value());
    CHECK(fit.alpha_s == want->alpha);
    CHECK(fit.beta_s == want->beta);
  }
}

TEST_CASE("Lab.Sweep.FitRefusesWithoutOneRankCells") {
  CHECK_THROWS_AS(lab::fit_cells({cell(2, 64, 1.0)}, 1024, 20e-6), ConfigError);
}
