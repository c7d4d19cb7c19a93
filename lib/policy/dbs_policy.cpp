// The "dbs" policy: batch sizes that equalise the ranks' predicted step times. Where the
// reports carry work times (Report::work: every agent's reports do) the plan comes from the
// per-rank cost model below; where they do not (older traces, replay of them, synthetic
// reports) it is batch in proportion to measured throughput. "dbs-rate" always plans by
// throughput (kept to compare the two).
//
// Words: rate r_i = rank i's samples/s measured in the epoch just ended (measured_rate: the
// median over its steps of samples / compute s when the report has it, else samples /
// compute_s); estimate v_i = the throughput the next plan is made from; last_i = the rate of the
// last epoch rank i reported. The estimator, per rank, after every epoch:
//   - no valid report (samples or compute_s is 0): v_i and last_i stay; a rank that never
//     reported is planned with the mean estimate of the ranks that have one.
//   - a median rate: v_i = r_i. The median is robust by itself (a stall that hits fewer than
//     half of the steps does not move it, a change that lasts the epoch does), so a lasting
//     change is followed after one epoch and a one-off stall is ignored.
//   - only aggregates: a stall inflates compute_s and looks like a lasting slowdown for one
//     epoch. A drop below kDrop * v_i while the history was steady (last_i within a factor
//     kDrop of v_i) is held as a suspected stall: v_i stays. A second low epoch in a row
//     (last_i is then low) is followed: v_i = r_i. Rises are followed at once: a stall cannot
//     make a rank look faster.
// There is no smoothing across epochs: v_i is always one epoch's measurement.
//
// Plan: b = the water-filled shares x_i of B in proportion to v within [min_batch, max_batch],
// each rounded to floor(x_i) or ceil(x_i) with sum b_i = B, as apportion() does. apportion()
// gives the leftover samples to the largest remainders; here they go to the ranks whose step
// time (floor(x_i) + 1) / v_i grows least (Rounding::least_step_time), since the epoch time is
// steps * T(b) with T(b) = max_i b_i / v_i. Largest remainder may round up a slow rank with a
// small batch, raising T by up to 1 / x_i, and +-0.5% noise flips such choices: in the
// property test's random cases it re-planned 124 of 90,000 noisy epochs, this rounding 2.
// The current plan is kept unless (T(current) - T(b)) / T(current) >= min_gain.
//
// Cost model (dbs when the reports carry work times; "dbs-rate" ignores them): each rank's step
// costs t_i(b) = alpha_i + beta_i * b, fitted by CostEstimator (lib/policy/estimator.h) from the
// steps it ran at different batch sizes (the short last step, earlier plans); ranks without a
// fit are costed b / v_i. The plan is water_fill's (equal predicted step time, bounds, sum B
// exactly) and T(b) = max_i t_i(b_i) + c, where c, the allreduce without waiting, is the least
// comm_s per step any rank reported (the last to arrive hardly waits). The gain gate needs
// gain >= max(min_gain, k(n) * the largest noise(i)): where the model is unsure the plan stays
// (no oscillation on noisy steps), except right after a change of speed, when min_gain alone
// decides (a real change is followed at once); the noise term is capped at kMaxNoiseGate, so a
// large imbalance is corrected even on very noisy steps. k(n): re-planning n ranks' noisy
// estimates "gains" about the largest of their errors, which grows with n (about sqrt(2 ln n)
// standard errors), so k(n) is the level the largest of n errors passes as rarely as the
// largest of kFewRanks passes kNoiseSigmas (7%): 2 up to 3 ranks, 3.1 at 64, 3.5 at 256.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "lib/common/error.h"
#include "lib/policy/cost.h"
#include "lib/policy/estimator.h"
#include "lib/policy/ideal.h"
#include "lib/policy/internal.h"

namespace dbs::policy::detail {
namespace {

constexpr double kDrop = 0.8;          // aggregate rate below kDrop * v_i is a suspected stall
constexpr double kNoiseSigmas = 2;     // the gain must exceed this many relative standard errors
constexpr double kMaxNoiseGate = 0.1;  // ... but a predicted gain of 10% is always taken
// state() = {version, v_0..v_{n-1}, last_0..last_{n-1}, CostEstimator state}; version 1 had
// no estimator state.
constexpr double kStateVersion = 2;

// Seconds of compute per step under batch for throughputs v (all > 0).
double step_s(const std::vector<int>& batch, const std::vector<double>& v) {
  double t = 0;
  for (std::size_t i = 0; i < batch.size(); ++i) t = std::max(t, batch[i] / v[i]);
  return t;
}

std::string number(double x) {
  return format(x >= 100 ? "%.0f" : "%.3g", x);
}

// "; <what> rank 3" or "; <what> ranks 3, 5 and 2 more".
std::string note(const char* what, const std::vector<int>& ranks) {
  if (ranks.empty()) return "";
  std::string s = format("; %s rank%s %d", what, ranks.size() > 1 ? "s" : "", ranks[0]);
  if (ranks.size() > 1) s += format(", %d", ranks[1]);
  if (ranks.size() > 2) s += format(" and %zu more", ranks.size() - 2);
  return s;
}

class Dbs : public Policy {
 public:
  Dbs(const Settings& settings, int world, bool cost_model)
      : cost_model_(cost_model),
        config_(settings),
        world_(world),
        estimate_(static_cast<std::size_t>(world), 0.0),
        last_(static_cast<std::size_t>(world), 0.0),
        cost_(world),
        noise_sigmas_(sigmas_for_ranks(kNoiseSigmas, world, false)) {}

  std::string name() const override { return cost_model_ ? "dbs" : "dbs-rate"; }

  Plan initial() const override {
    Plan p;
    p.global_batch = config_.global_batch;
    p.batch = policy::apportion(std::vector<double>(estimate_.size(), 1.0), config_.global_batch,
                                config_.min_batch, config_.max_batch_or_global());
    p.offset = offsets_of(p.batch);
    p.throughput.assign(estimate_.size(), 0.0);
    p.reason = "initial: equal split";
    return p;
  }

  // All or nothing: when the reports or the plan made from them are refused (InputError),
  // the estimator is left as it was.
  Plan next(const Plan& current, std::span<const Report> reports) override {
    return all_or_nothing(current, reports, [&](const std::vector<Report>& by) {
      const Learned learned = learn(by);
      return decide(current, by, learned);
    });
  }

  void observe(const Plan& current, std::span<const Report> reports) override {
    all_or_nothing(current, reports, [&](const std::vector<Report>& by) { return learn(by); });
  }

  std::vector<double> state() const override {
    std::vector<double> s{kStateVersion};
    s.insert(s.end(), estimate_.begin(), estimate_.end());
    s.insert(s.end(), last_.begin(), last_.end());
    cost_.append_state(s);
    return s;
  }

  void set_state(const std::vector<double>& s) override {
    const std::size_t n = estimate_.size();
    if (s.empty()) {
      estimate_.assign(n, 0.0);
      last_.assign(n, 0.0);
      cost_ = CostEstimator(world_);
      return;
    }
    const std::size_t v2 = 1 + 2 * n + CostEstimator::state_size(world_);
    const bool ok =
        (s[0] == 1 && s.size() == 1 + 2 * n) || (s[0] == kStateVersion && s.size() == v2);
    if (!ok) {
      throw InputError(
          format("dbs policy state: expected version %g and %zu values for %zu ranks (or "
                 "version 1 and %zu), got %zu values",
                 kStateVersion, v2, n, 1 + 2 * n, s.size()));
    }
    for (std::size_t i = 1; i < s.size(); ++i) {
      if (!std::isfinite(s[i]) || s[i] < 0) {
        throw InputError(format("dbs policy state: value %zu is %g", i, s[i]));
      }
    }
    const auto mid = s.begin() + 1 + static_cast<std::ptrdiff_t>(n);
    estimate_.assign(s.begin() + 1, mid);
    last_.assign(mid, mid + static_cast<std::ptrdiff_t>(n));
    cost_ = CostEstimator(world_);
    if (s[0] == kStateVersion) cost_.read_state(s, 1 + 2 * n);
  }

 private:
  // The ranks whose estimate was held, that sent no valid report, and whose speed changed.
  struct Learned {
    std::vector<int> held, silent, changed;
  };

  // Updates the estimator (rates and cost model) from one epoch's reports by rank.
  Learned learn(const std::vector<Report>& by) {
    Learned l;
    observe_rates(by, l.held, l.silent);
    if (cost_model_) cost_.observe(by, l.changed);
    return l;
  }

  Plan decide(const Plan& current, const std::vector<Report>& by, const Learned& learned) {
    const std::vector<int>& held = learned.held;
    const std::vector<int>& silent = learned.silent;
    if (cost_model_ && cost_.any())
      return decide_by_cost(current, by, held, silent, learned.changed);
    Plan p;
    p.epoch = current.epoch + 1;
    p.global_batch = config_.global_batch;
    p.batch = current.batch;
    const std::vector<double> v = planning_rates();
    if (v.empty()) {
      p.offset = offsets_of(p.batch);
      p.throughput.assign(estimate_.size(), 0.0);
      p.reason = "kept: no valid report yet";
      return p;
    }
    const std::vector<int> proposal =
        apportion(v, config_.global_batch, config_.min_batch, config_.max_batch_or_global(),
                  Rounding::least_step_time);
    const double before = step_s(current.batch, v), after = step_s(proposal, v);
    const double gain = (before - after) / before;
    if (proposal == current.batch) {
      p.reason = "kept: already balanced, predicted " + with_ideal(after, v);
    } else if (gain < config_.min_gain) {
      p.reason = format("kept: predicted gain %.1f%% < %.1f%%", 100 * gain, 100 * config_.min_gain);
    } else {
      p.batch = proposal;
      p.changed = true;
      const auto slowest = std::min_element(v.begin(), v.end()) - v.begin();
      p.reason = format("rebalanced: predicted %s -> %s, rank %td slowest at %s samples/s",
                        epoch_time(before).c_str(), with_ideal(after, v).c_str(), slowest,
                        number(v[static_cast<std::size_t>(slowest)]).c_str());
    }
    p.reason += note("stall suspected, estimate held for", held);
    p.reason += note("no valid report from", silent);
    p.offset = offsets_of(p.batch);
    fill_predictions(p, v, config_.samples_per_epoch,
                     exchange_epoch_s(config_, p.epoch, exchange_s(config_, by)));
    return p;
  }

  // f(reports by rank) with the estimator restored where it throws.
  template <class F>
  std::invoke_result_t<F, const std::vector<Report>&> all_or_nothing(
      const Plan& current, std::span<const Report> reports, F f) {
    check_current(current, config_, world_);
    const std::vector<Report> by = by_rank(reports, world_);
    const std::vector<double> estimate = estimate_, last = last_;
    const CostEstimator cost = cost_;
    try {
      return f(by);
    } catch (...) {
      estimate_ = estimate;
      last_ = last;
      cost_ = cost;
      throw;
    }
  }

  // Updates estimate_ and last_ from one epoch's reports (see the comment at the top).
  void observe_rates(const std::vector<Report>& by, std::vector<int>& held,
                     std::vector<int>& silent) {
    for (std::size_t i = 0; i < by.size(); ++i) {
      const double rate = measured_rate(by[i]);
      if (!std::isfinite(rate))
        throw InputError(
            format("report of rank %zu: throughput %g samples/s is not finite", i, rate));
      if (rate <= 0) {
        silent.push_back(static_cast<int>(i));
        continue;
      }
      double& v = estimate_[i];
      const bool median = by[i].step_rate_median > 0;
      const bool steady = last_[i] >= kDrop * v && kDrop * last_[i] <= v;
      if (!median && v > 0 && rate < kDrop * v && steady) {
        held.push_back(static_cast<int>(i));
      } else {
        v = rate;
      }
      last_[i] = rate;
    }
  }

  // The estimates, with the mean of the known ones for ranks that never reported; empty when
  // no rank has an estimate.
  std::vector<double> planning_rates() const {
    double sum = 0;
    int known = 0;
    for (const double v : estimate_) {
      if (v > 0) {
        sum += v;
        ++known;
      }
    }
    if (known == 0) return {};
    std::vector<double> v = estimate_;
    for (double& x : v) x = x > 0 ? x : sum / known;
    return v;
  }

  // A step time (s) as the epoch time it predicts, or as a step time when N is unknown.
  std::string epoch_time(double step) const {
    const std::int64_t n = config_.samples_per_epoch, b = config_.global_batch;
    if (n <= 0) return "step " + number(1000 * step) + " ms";
    return number(static_cast<double>((n + b - 1) / b) * step) + " s";
  }

  // epoch_time(step) followed by the ideal under v: "8.1 s (ideal 8.0 s)".
  std::string with_ideal(double step, const std::vector<double>& v) const {
    const std::int64_t n = config_.samples_per_epoch;
    const double ideal =
        n > 0 ? ideal_time(v, static_cast<double>(n)) : 1000 * ideal_time(v, config_.global_batch);
    return epoch_time(step) + " (ideal " + number(ideal) + (n > 0 ? " s)" : " ms)");
  }

  // decide() under the cost model (see the comment at the top).
  Plan decide_by_cost(const Plan& current, const std::vector<Report>& by,
                      const std::vector<int>& held, const std::vector<int>& silent,
                      const std::vector<int>& changed) {
    const std::vector<double> v = planning_rates();
    std::vector<Cost> costs(static_cast<std::size_t>(world_));
    double noise = 0;
    Cost mean{};  // of the fitted ranks, for a rank with neither a fit nor a rate
    int fitted = 0;
    for (int i = 0; i < world_; ++i) {
      const auto c = cost_.cost(i);
      const std::size_t k = static_cast<std::size_t>(i);
      costs[k] = c ? *c : Cost{0.0, v.empty() ? 0.0 : 1.0 / v[k]};
      if (c) mean = {mean.alpha + c->alpha, mean.beta + c->beta}, ++fitted;
      noise = std::max(noise, cost_.noise(i));
    }
    for (Cost& c : costs)
      if (!(c.beta > 0)) c = {mean.alpha / fitted, mean.beta / fitted};
    const std::int64_t epoch = current.epoch + 1;
    const double per_exchange = exchange_s(config_, by);
    const double comm = exchange_step_s(config_, epoch, per_exchange);  // per step

    Plan p;
    p.epoch = current.epoch + 1;
    p.global_batch = config_.global_batch;
    p.batch = current.batch;
    const std::vector<int> proposal =
        water_fill(costs, config_.global_batch, config_.min_batch, config_.max_batch_or_global());
    const double before = step_time(costs, current.batch, comm),
                 after = step_time(costs, proposal, comm);
    const double gain = (before - after) / before;
    const double need =
        changed.empty() ? std::max(config_.min_gain, std::min(noise_sigmas_ * noise, kMaxNoiseGate))
                        : config_.min_gain;
    if (proposal == current.batch) {
      p.reason = "kept: already balanced, predicted " + epoch_time(after);
    } else if (gain < need) {
      p.reason = format("kept: predicted gain %.1f%% < %.1f%%", 100 * gain, 100 * need);
      if (need > config_.min_gain) p.reason += " (model noise)";
    } else {
      p.batch = proposal;
      p.changed = true;
      p.reason = format("rebalanced: predicted %s -> %s", epoch_time(before).c_str(),
                        epoch_time(after).c_str());
    }
    const std::size_t slow = static_cast<std::size_t>(
        std::max_element(costs.begin(), costs.end(),
                         [](const Cost& a, const Cost& b) { return a.beta < b.beta; }) -
        costs.begin());
    p.reason +=
        format("; cost model, rank %zu slowest: %s ms + %s ms/sample, ", slow,
               number(1000 * costs[slow].alpha).c_str(), number(1000 * costs[slow].beta).c_str());
    p.reason += config_.averages_in(epoch)
                    ? format("average %s ms every %d steps", number(1000 * per_exchange).c_str(),
                             config_.average_every)
                    : format("allreduce %s ms", number(1000 * comm).c_str());
    p.reason += note("speed changed on", changed);
    p.reason += note("stall suspected, estimate held for", held);
    p.reason += note("no valid report from", silent);
    p.offset = offsets_of(p.batch);
    p.throughput.resize(costs.size());
    for (std::size_t i = 0; i < costs.size(); ++i)
      p.throughput[i] = p.batch[i] / costs[i].at(p.batch[i]);
    p.predicted_epoch_s = policy::epoch_time(costs, p, config_.samples_per_epoch, comm);
    p.exchange_epoch_s = exchange_epoch_s(config_, epoch, per_exchange);
    p.ideal_epoch_s =
        ideal_epoch_time(costs, config_.global_batch, config_.samples_per_epoch, comm);
    if (!std::isfinite(p.predicted_epoch_s) || !std::isfinite(p.ideal_epoch_s))
      throw InputError(
          format("plan for epoch %lld: predicted epoch time %g s, ideal %g s: not "
                 "finite",
                 static_cast<long long>(p.epoch + 1), p.predicted_epoch_s, p.ideal_epoch_s));
    return p;
  }

  bool cost_model_;
  Settings config_;
  int world_;
  std::vector<double> estimate_;  // v_i, samples/s; 0 = none yet
  std::vector<double> last_;      // r_i of the last epoch rank i reported, samples/s; 0 = none
  CostEstimator cost_;
  double noise_sigmas_;  // k(n) of the gain gate
};

}  // namespace

std::unique_ptr<Policy> make_dbs(const Settings& settings, int world, bool cost_model) {
  return std::make_unique<Dbs>(settings, world, cost_model);
}

}  // namespace dbs::policy::detail
