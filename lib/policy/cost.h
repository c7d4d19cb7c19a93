// The per-rank cost model of a step: t_i(b) = alpha_i + beta_i * b seconds of work
// (docs/concepts/cost-model.md, "Cost model"): alpha_i the fixed per-step work (optimizer update,
// gradient copy, step overhead), beta_i the seconds per sample. Fitted from the step times a rank
// reports (CostPoint) and solved for the plan that equalises predicted step times. And the
// exchange's share of an epoch: the gradient allreduce of every step, or the model averages of an
// averaging epoch (Settings::average_every), which every step's cost shares.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "lib/policy/plan.h"

namespace dbs::policy {

struct Cost {
  double alpha = 0;  // s per step, >= 0
  double beta = 0;   // s per sample, > 0
  double at(double b) const { return alpha + beta * b; }
  bool operator==(const Cost&) const = default;
};

// The CostPoints of a report from its steps (local batch, work seconds): the two batch sizes
// with the most steps (most first; ties: the larger batch), each with the mean and standard
// deviation of its work times. Steps with batch 0 are skipped.
std::array<CostPoint, 2> cost_points(std::span<const std::pair<int, double>> steps);

// A point of a fit: mean work time per step at a batch size, and its weight (steps, possibly
// decayed: lib/policy/estimator.h).
struct Sample {
  double batch = 0;
  double weight = 0;
  double mean_s = 0;
};

// Least-squares fit of t(b) = alpha + beta * b to samples, each weighted by its weight; the
// same rules as fit_cost below. Samples with batch or weight <= 0 are skipped.
std::optional<Cost> fit_samples(std::span<const Sample> samples);

// Least-squares fit of t(b) = alpha + beta * b to points, each weighted by its steps.
// Degenerate cases, in order: no point with steps and batch > 0 -> nullopt; one batch size
// only, or a fit with beta <= 0 (noise across batch sizes that are close) -> the proportional
// model through the weighted mean point (alpha = 0, beta = sum n t / sum n b); alpha < 0 ->
// alpha = 0 and beta fitted through the origin (beta = sum n t b / sum n b^2).
std::optional<Cost> fit_cost(std::span<const CostPoint> points);

// Water-filling: batch sizes b_i in [lo, hi] with sum b_i = total exactly that minimise the
// predicted step time max_i t_i(b_i). The continuous level T solves sum_i clamp((T - alpha_i) /
// beta_i, lo, hi) = total; every rank gets floor of its share and the leftover samples go one
// at a time to the rank whose t_i(b_i + 1) is least (ties: lower rank), which is optimal for a
// max of increasing costs. Requires n * lo <= total <= n * hi and every beta_i > 0; throws
// ConfigError otherwise.
std::vector<int> water_fill(std::span<const Cost> costs, int total, int lo, int hi);

// Seconds per exchange without waiting: the least comm_s per exchange any rank reported (the
// last rank to arrive hardly waits), a report's exchanges being Settings::exchanges of its epoch
// and steps (its steps, or its averaging epoch's averages); 0 without a report with steps.
double exchange_s(const Settings& settings, std::span<const Report> reports);

// Seconds of exchange in epoch `epoch` (0-based) at `per_exchange` seconds each, and per step:
// Settings::exchanges of the epoch's S = ceil(N / B) steps times per_exchange, and that over S.
// Where N is unknown (0) the epoch's is 0 and a step's is per_exchange, or per_exchange / H in
// an averaging epoch.
double exchange_epoch_s(const Settings& settings, std::int64_t epoch, double per_exchange);
double exchange_step_s(const Settings& settings, std::int64_t epoch, double per_exchange);

// Predicted seconds of one step: max_i t_i(b_i) + comm_s (the exchange's share of a step).
double step_time(std::span<const Cost> costs, const std::vector<int>& batch, double comm_s);

// Predicted seconds of an epoch of `samples` samples under plan: ceil(N / B) - 1 full steps and
// the short last step split as step_batch splits it, each costing step_time. 0 when
// samples is 0.
double epoch_time(std::span<const Cost> costs, const Plan& plan, std::int64_t samples,
                  double comm_s);

// The continuous optimum of epoch_time: every step at the common level T of water_fill without
// bounds or rounding (full steps at B, the last at its size). 0 when samples is 0.
double ideal_epoch_time(std::span<const Cost> costs, int global_batch, std::int64_t samples,
                        double comm_s);

}  // namespace dbs::policy
