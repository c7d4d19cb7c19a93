#include "lib/policy/estimator.h"

#include <algorithm>
#include <cmath>

#include "lib/common/error.h"
#include "lib/common/format.h"

namespace dbs::policy::detail {

double family_sigmas(int n, double rate, bool two_sided) {
  DBS_CHECK(n >= 1 && rate > 0 && rate < 1);
  // P(Z > k) = erfc(k / sqrt 2) / 2, decreasing in k: bisect n * P = rate on [0, 40].
  const auto tail = [&](double k) {
    return n * std::erfc(k / std::sqrt(2.0)) * (two_sided ? 1.0 : 0.5);
  };
  double lo = 0, hi = 40;
  for (int i = 0; i < 100; ++i) {
    const double mid = (lo + hi) / 2;
    (tail(mid) > rate ? lo : hi) = mid;
  }
  return hi;
}

double sigmas_for_ranks(double k, int n, bool two_sided) {
  const double rate = kFewRanks * std::erfc(k / std::sqrt(2.0)) * (two_sided ? 1.0 : 0.5);
  return std::max(k, family_sigmas(std::max(n, 1), rate, two_sided));
}

double CostEstimator::sigmas(int world) {
  return sigmas_for_ranks(kSigmas, world, true);
}

std::optional<Cost> CostEstimator::fit(const History& h) {
  std::vector<Sample> all, firm;
  for (const Point& p : h) {
    if (p.weight <= 0) continue;
    all.push_back({p.batch, p.weight, p.mean});
    if (p.weight >= kFirmWeight) firm.push_back(all.back());
  }
  const std::vector<Sample>& use = firm.empty() ? all : firm;
  // Batch sizes close together (small re-plans of a rank, common among many ranks) cannot pin
  // a line: its slope is their noise over their spread, and a slope near 0 would make the rank
  // look free per sample and be given far more than it has ever run. Under kMinSpread of the
  // largest, the rank is costed in proportion, through the points' weighted mean.
  double lo = 0, hi = 0, swb = 0, swt = 0;
  for (const Sample& s : use) {
    lo = lo == 0 ? s.batch : std::min(lo, s.batch);
    hi = std::max(hi, s.batch);
    swb += s.weight * s.batch, swt += s.weight * s.mean_s;
  }
  if (hi > 0 && hi - lo < kMinSpread * hi) {
    if (!(swt > 0) || !(swb > 0)) return std::nullopt;
    return Cost{0.0, swt / swb};
  }
  std::optional<Cost> c = fit_samples(use);
  // fit_samples falls back to a line through the origin when its line over several batch sizes
  // has alpha < 0 or beta <= 0. Then the points disagree: the speed moved between the epochs
  // they come from (the first epoch's warm-up is 7-12% slower per sample). That fallback
  // weights each point by w * b^2, so the largest batch decides, often the stale one from the
  // equal split, and a rank moved to small batches is over-estimated and under-loaded. Trust
  // the heaviest point instead (most steps: the current plan's, mostly), in proportion.
  const auto several = std::any_of(use.begin(), use.end(),
                                   [&](const Sample& s) { return s.batch != use.front().batch; });
  if (c && c->alpha == 0 && several) {
    const Sample* heaviest = &use.front();
    for (const Sample& s : use)
      if (s.weight > heaviest->weight) heaviest = &s;
    if (heaviest->mean_s > 0) c = Cost{0.0, heaviest->mean_s / heaviest->batch};
  }
  return c;
}

void CostEstimator::merge(History& h, const CostPoint& c, bool prior) {
  const double n = static_cast<double>(c.steps), var = c.sd_s * c.sd_s;
  for (Point& p : h) {
    if (p.weight > 0 && p.batch == c.batch) {
      // Right after a change the history is only the old points scaled (a prior). Fewer steps
      // than kFirmWeight (the short last step) that disagree with the prior by more than
      // kMinChangeExtrapolated replace it instead of confirming it: merged, they would make the
      // point firm, and one throttled short step would set alpha.
      if (prior && n < kFirmWeight &&
          std::abs(c.mean_s - p.mean) > kMinChangeExtrapolated * p.mean) {
        p = {static_cast<double>(c.batch), n, c.mean_s, var};
        return;
      }
      const double w = p.weight + n;
      p.mean = (p.weight * p.mean + n * c.mean_s) / w;
      p.var = (p.weight * p.var + n * var) / w;
      p.weight = w;
      return;
    }
  }
  // A new batch size replaces the lightest point (an empty one first; ties: the first).
  Point* lightest = &h[0];
  for (Point& p : h)
    if (p.weight < lightest->weight) lightest = &p;
  *lightest = {static_cast<double>(c.batch), n, c.mean_s, var};
}

void CostEstimator::observe(const std::vector<Report>& by, std::vector<int>& changed) {
  for (std::size_t i = 0; i < by.size() && i < history_.size(); ++i) {
    const Report& r = by[i];
    const CostPoint& main = r.work[0];
    if (main.batch <= 0 || main.steps <= 0) continue;
    for (const CostPoint& c : r.work)
      if (!std::isfinite(c.mean_s) || c.mean_s < 0 || !std::isfinite(c.sd_s) || c.sd_s < 0)
        throw InputError(
            format("report of rank %zu: work time %g s (sd %g s) at batch %d is "
                   "not a finite number >= 0",
                   i, c.mean_s, c.sd_s, c.batch));
    History& h = history_[i];
    const Point* same = nullptr;  // the history at the main point's batch size
    for (const Point& p : h)
      if (p.weight >= kFirmWeight && p.batch == main.batch) same = &p;
    const std::optional<Cost> cost = fit(h);
    bool prior = false;  // the history was cut to a prior by a change this epoch
    if (same != nullptr || cost) {
      const double predicted = same != nullptr ? same->mean : cost->at(main.batch);
      const double n = static_cast<double>(main.steps);
      double se2 = main.sd_s * main.sd_s / n;
      if (same != nullptr) se2 += same->var / same->weight;
      const double min_change = same != nullptr ? kMinChange : kMinChangeExtrapolated;
      const double diff = std::abs(main.mean_s - predicted);
      if (diff > sigmas_ * std::sqrt(se2) && diff > min_change * predicted && predicted > 0) {
        // A slower or faster CPU scales fixed and per-sample work alike: the old points,
        // scaled by the change, stay as a weak prior (weight <= kPriorWeight) for the batch
        // sizes this epoch did not measure.
        const double f = main.mean_s / predicted;
        for (Point& p : h) {
          p.mean *= f;
          p.var *= f * f;
          p.weight = std::min(p.weight, kPriorWeight);
        }
        changed.push_back(static_cast<int>(i));
        prior = true;
      }
    }
    for (Point& p : h) p.weight *= kKeep;
    for (const CostPoint& c : r.work)
      if (c.batch > 0 && c.steps > 0) merge(h, c, prior);
  }
}

std::optional<Cost> CostEstimator::cost(int rank) const {
  return fit(history_[static_cast<std::size_t>(rank)]);
}

double CostEstimator::noise(int rank) const {
  const History& h = history_[static_cast<std::size_t>(rank)];
  const Point* heaviest = nullptr;
  for (const Point& p : h)
    if (p.weight > 0 && (heaviest == nullptr || p.weight > heaviest->weight)) heaviest = &p;
  if (heaviest == nullptr || !(heaviest->mean > 0)) return 0.0;
  return std::sqrt(heaviest->var / heaviest->weight) / heaviest->mean;
}

bool CostEstimator::any() const {
  for (const History& h : history_)
    for (const Point& p : h)
      if (p.weight > 0) return true;
  return false;
}

void CostEstimator::append_state(std::vector<double>& s) const {
  for (const History& h : history_)
    for (const Point& p : h) s.insert(s.end(), {p.batch, p.weight, p.mean, p.var});
}

void CostEstimator::read_state(const std::vector<double>& s, std::size_t at) {
  DBS_CHECK_LE(at + state_size(static_cast<int>(history_.size())), s.size());
  for (History& h : history_) {
    for (Point& p : h) {
      for (int k = 0; k < 4; ++k)
        if (!std::isfinite(s[at + k]) || s[at + k] < 0)
          throw InputError(format("dbs policy state: value %zu is %g", at + k, s[at + k]));
      p = {s[at], s[at + 1], s[at + 2], s[at + 3]};
      at += 4;
    }
  }
}

}  // namespace dbs::policy::detail
