// The dbs policy's per-rank cost estimator: a short history of work times per batch size
// (from Report::work), smoothed across epochs, with change detection. Part of lib/policy's
// inside (detail), deterministic, no I/O.
//
// Words: a history point is (batch b, weight w, mean m, variance q): the decayed mean of the
// rank's work time per step at b; w counts steps, decayed. Per rank and epoch:
//   - the epoch's main point (its most frequent batch) is checked against the history's point
//     at the same batch size if it has one of weight >= kFirmWeight (a difference beyond
//     sigmas(n) standard errors and kMinChange relative), else against the fit's extrapolation
//     (beyond kMinChangeExtrapolated relative: alpha may still be unknown): a change of speed;
//     every history point is then scaled by the ratio of the new mean to the old and cut to weight
//     kPriorWeight, so this epoch dominates and a real change is followed at once, with the old
//     batch sizes' shape as a weak prior. A point of this epoch with fewer than kFirmWeight steps
//     (the short last step) that disagrees with its prior by more than kMinChangeExtrapolated
//     replaces it rather than merging into it (and so stays below kFirmWeight: one throttled step
//     is no fixed cost).
//   - otherwise every point's weight is multiplied by kKeep and the epoch's points merged in
//     (same b: weighted mean and pooled variance; new b: added, the lightest point evicted
//     beyond kPoints). Steady speeds thus average over about 1 / (1 - kKeep) epochs.
// The fit uses the points of weight >= kFirmWeight when there are any: the single short last
// step of an epoch is too noisy (one throttled step doubles it) to pin alpha until a few
// epochs have accumulated it. Points whose batch sizes lie within kMinSpread of the largest
// are fitted in proportion (alpha = 0): a line through them would extrapolate their noise.
// sigmas(n): kSigmas standard errors suit a few ranks; among n ranks some rank's error passes a
// fixed threshold n times as often (256 ranks at 4 sigmas: a false change every 60 epochs from
// normal noise alone, more where the steps' noise has heavier tails), and a change lowers the
// policy's gain gate for every rank. So the threshold is the k at which n errors all stay within
// +-k as often as kFewRanks errors stay within +-kSigmas (Bonferroni): 4 up to 3 ranks, 4.7 at
// 64, 4.9 at 256.
// noise(i): the relative standard error of the mean at the rank's heaviest point, sqrt(q / w) /
// m: the smoothing has shrunk it with the weight. The policy keeps its plan unless the
// predicted gain exceeds a multiple of it (hysteresis where the model is unsure).
#pragma once

#include <array>
#include <optional>
#include <vector>

#include "lib/policy/cost.h"
#include "lib/policy/plan.h"

namespace dbs::policy::detail {

class CostEstimator {
 public:
  static constexpr int kPoints = 4;
  static constexpr double kKeep = 0.75;
  static constexpr double kSigmas = 4;
  static constexpr double kMinChange = 0.08;
  static constexpr double kMinChangeExtrapolated = 0.25;
  static constexpr double kFirmWeight = 2;
  static constexpr double kPriorWeight = 2;
  static constexpr double kMinSpread = 0.2;

  explicit CostEstimator(int world)
      : history_(static_cast<std::size_t>(world)), sigmas_(sigmas(world)) {}

  // The change test's threshold in standard errors for `world` ranks (see the top).
  static double sigmas(int world);

  // One epoch's reports, by rank. Ranks whose speed changed are appended to `changed`.
  void observe(const std::vector<Report>& by, std::vector<int>& changed);
  // The fit of rank i's history; nullopt when it has none.
  std::optional<Cost> cost(int rank) const;
  // Relative standard error of rank i's heaviest point (0 without history).
  double noise(int rank) const;
  // Whether any rank has a history (reports carried work times).
  bool any() const;

  // State: per rank kPoints x (batch, weight, mean, variance), appended to / read from s at
  // `at`; throws InputError for non-finite or negative values.
  void append_state(std::vector<double>& s) const;
  void read_state(const std::vector<double>& s, std::size_t at);
  static std::size_t state_size(int world) { return static_cast<std::size_t>(world) * kPoints * 4; }

 private:
  struct Point {
    double batch = 0, weight = 0, mean = 0, var = 0;
  };
  using History = std::array<Point, kPoints>;
  static std::optional<Cost> fit(const History& h);
  static void merge(History& h, const CostPoint& p, bool prior);

  std::vector<History> history_;
  double sigmas_;
};

// The k for which n independent standard normal errors all stay below k (one-sided) or
// within +-k (two-sided) except with probability `rate`, by Bonferroni's bound:
// n * P(Z > k) = rate, or n * P(|Z| > k) = rate.
double family_sigmas(int n, double rate, bool two_sided);

// The policy's thresholds in standard errors, k, suit a few ranks (kFewRanks). For n ranks:
// the level the largest of n errors passes as rarely as the largest of kFewRanks passes k
// (family_sigmas), and never below k.
constexpr int kFewRanks = 3;
double sigmas_for_ranks(double k, int n, bool two_sided);

}  // namespace dbs::policy::detail
