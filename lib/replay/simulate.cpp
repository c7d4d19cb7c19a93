// Words: a chunk is a run of consecutive steps under one batch split and one set of rates (no
// slowdown starts or stops inside it, no re-plan falls inside it, the short last step is a chunk
// of its own); the window is the chunks since the last re-plan.
#include "lib/replay/simulate.h"

#include <algorithm>
#include <utility>

#include "lib/common/error.h"
#include "lib/planner/planner.h"
#include "lib/policy/cost.h"
#include "lib/policy/ideal.h"
#include "lib/policy/steps.h"

namespace dbs::replay {
namespace {

// The agent's progress of step s: e + s / S (0-based epochs).
double progress(std::int64_t e, std::int64_t s, std::int64_t steps) {
  return static_cast<double>(e) + static_cast<double>(s) / static_cast<double>(steps);
}

// The first step s in [0, steps] with progress + 1 >= at (steps when none), as the agent's
// Disturbance::active_at compares.
std::int64_t first_step_at(std::int64_t e, std::int64_t steps, double at) {
  std::int64_t lo = 0, hi = steps;
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (progress(e, mid, steps) + 1.0 >= at) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

// A slowdown active during steps [begin, end) of the epoch.
struct Active {
  std::size_t rank;
  double factor;
  std::int64_t begin, end;
};

std::vector<Active> active_in(const Cluster& c, std::int64_t e) {
  const std::int64_t S = c.steps();
  std::vector<Active> out;
  for (const trace::Disturbance& d : c.slowdowns) {
    const std::int64_t begin = first_step_at(e, S, d.from);
    const std::int64_t end = d.to < 0 ? S : first_step_at(e, S, d.to);
    if (begin < end) out.push_back({static_cast<std::size_t>(d.rank), d.factor, begin, end});
  }
  return out;
}

struct Chunk {
  std::int64_t begin, steps;  // steps [begin, begin + steps)
  std::vector<int> batch;
  std::vector<double> rate;  // samples/s per rank
  double step_s = 0;         // the slowest rank's compute per step
};

// Rank i's work points over the chunks [from, end): policy::cost_points of its steps' model
// times b_i / v_i, scaled by the recorded run's factors (Cluster::work_bias).
std::array<CostPoint, 2> work_of(const Cluster::WorkBias& bias,
                                         const std::vector<Chunk>& chunks, std::size_t from,
                                         std::size_t i) {
  if (!bias.reported) return {};
  std::vector<std::pair<int, double>> steps;
  for (std::size_t k = from; k < chunks.size(); ++k) {
    const Chunk& ch = chunks[k];
    if (ch.batch[i] > 0) steps.insert(steps.end(), static_cast<std::size_t>(ch.steps), {ch.batch[i], ch.batch[i] / ch.rate[i]});
  }
  std::array<CostPoint, 2> work = policy::cost_points(steps);
  for (std::size_t k = 0; k < work.size(); ++k) {
    if (work[k].batch == 0) continue;
    work[k].mean_s *= bias.mean[k];
    work[k].sd_s = bias.sd[k] * work[k].mean_s;
  }
  return work;
}

// Rank i's reports over the chunks [from, end). median: policy::median_rate over the steps of
// rank i's rate b_i / t_i, counting steps where it had samples, as the agent's. comm_s: the
// waiting for the slowest rank plus allreduce_s per step when with_comm (the agent's epoch
// report times the allreduce including the wait); reports over a window of steps carry none
// (the agent's carry only compute times).
std::vector<Report> reports_of(const Cluster& c, const std::vector<Chunk>& chunks,
                                       std::size_t from, std::int64_t epoch,
                                       const Plan& plan, bool with_comm,
                                       double allreduce_s) {
  const std::vector<double>* bias =
      c.median_bias.empty() ? nullptr : &c.median_bias[static_cast<std::size_t>(epoch)];
  std::vector<std::pair<double, std::int64_t>> rates;  // (rate, steps)
  std::vector<Report> out(plan.batch.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    Report& r = out[i];
    r.rank = static_cast<int>(i);
    r.epoch = epoch;
    r.batch = plan.batch[i];
    rates.clear();
    double wait = 0;
    for (std::size_t k = from; k < chunks.size(); ++k) {
      const Chunk& ch = chunks[k];
      const auto steps = static_cast<double>(ch.steps);
      const double t = ch.batch[i] > 0 ? ch.batch[i] / ch.rate[i] : 0.0;
      r.samples += ch.steps * ch.batch[i];
      r.compute_s += steps * t;
      r.steps += ch.steps;
      wait += steps * (ch.step_s - t);
      if (ch.batch[i] > 0) rates.emplace_back(ch.rate[i], ch.steps);
    }
    if (with_comm) r.comm_s = wait + allreduce_s * static_cast<double>(r.steps);
    r.step_rate_median = policy::median_rate(rates) * (bias != nullptr ? (*bias)[i] : 1.0);
    if (!c.work_bias.empty()) r.work = work_of(c.work_bias[static_cast<std::size_t>(epoch)][i], chunks, from, i);
  }
  return out;
}

// The index of the first chunk that starts at or after `step`.
std::size_t chunk_at(const std::vector<Chunk>& chunks, std::int64_t step) {
  std::size_t k = chunks.size();
  while (k > 0 && chunks[k - 1].begin >= step) --k;
  return k;
}

}  // namespace

std::vector<std::int64_t> rate_changes(const Cluster& c, std::int64_t e) {
  std::vector<std::int64_t> out;
  for (const Active& a : active_in(c, e)) {
    for (const std::int64_t s : {a.begin, a.end}) {
      if (s > 0 && s < c.steps()) out.push_back(s);
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<double> rates_at(const Cluster& c, std::int64_t e, std::int64_t step) {
  std::vector<double> v = c.base[static_cast<std::size_t>(e)];
  for (const Active& a : active_in(c, e)) {
    if (a.begin <= step && step < a.end) v[a.rank] /= a.factor;
  }
  return v;
}

EpochRun run_epoch(const Cluster& c, const CostModel& cost, std::int64_t e, const PlanAt& start,
                   int rebalance_every, const Replanner& replan) {
  const auto n = static_cast<std::size_t>(c.world);
  const std::int64_t S = c.steps(), B = c.global_batch, N = c.samples_per_epoch;
  const std::int64_t K = rebalance_every;
  DBS_CHECK(e >= 0 && e < c.epochs());
  DBS_CHECK_EQ(start.plan.batch.size(), n);
  const std::vector<double>& base = c.base[static_cast<std::size_t>(e)];

  const std::vector<Active> active = active_in(c, e);
  std::vector<std::int64_t> events{S};
  for (const Active& a : active) events.insert(events.end(), {a.begin, a.end});
  if (N % B != 0) events.push_back(S - 1);
  if (K > 0 && S > K) events.push_back(S - K);  // the next plan's basis starts there
  std::sort(events.begin(), events.end());

  EpochRun run;
  run.plans.push_back(start);
  Plan plan = start.plan;
  std::vector<Chunk> chunks;
  std::size_t window_from = 0;
  for (std::int64_t s = 0; s < S;) {
    std::int64_t next = *std::upper_bound(events.begin(), events.end(), s);
    if (K > 0) next = std::min(next, (s / K + 1) * K);
    const std::int64_t gn = std::min(B, N - s * B);
    Chunk ch{s, next - s, step_batch(plan, static_cast<int>(gn)), base};
    for (const Active& a : active) {
      if (a.begin <= s && s < a.end) ch.rate[a.rank] /= a.factor;
    }
    for (std::size_t i = 0; i < n; ++i)
      if (ch.batch[i] > 0) ch.step_s = std::max(ch.step_s, ch.batch[i] / ch.rate[i]);
    run.compute_s += static_cast<double>(ch.steps) * ch.step_s;
    run.ideal_compute_s += policy::ideal_time(ch.rate, static_cast<double>(ch.steps * gn));
    chunks.push_back(std::move(ch));
    s = next;
    if (K > 0 && s % K == 0 && s < S) {
      const std::vector<Report> window =
          reports_of(c, chunks, window_from, e, plan, false, 0);
      if (std::optional<Plan> p = replan(plan, s, window)) {
        plan = std::move(*p);
        run.plans.push_back({s, "rebalance", plan});
        ++run.replans;
      }
      window_from = chunks.size();
    }
  }
  const double per_step = static_cast<double>(S) * cost.step_s();
  run.time_s = run.compute_s + per_step;
  run.ideal_s = run.ideal_compute_s + per_step;
  run.reports = reports_of(c, chunks, 0, e, plan, true, cost.allreduce_s);
  if (K > 0) run.basis = reports_of(c, chunks, chunk_at(chunks, S - K), e, plan, false, 0);
  return run;
}

SimResult simulate(const Cluster& c, const CostModel& cost, Settings config) {
  config.global_batch = c.global_batch;
  config.samples_per_epoch = c.samples_per_epoch;
  // The planner the agent embeds: its plan in force is the simulated run's plan.
  planner::Embedded planner(config, c.world);
  const Replanner replan =
      [&planner](const Plan& /*current*/, std::int64_t /*step*/,
                 std::span<const Report> window) -> std::optional<Plan> {
    if (std::optional<Planned> p = planner.rebalance(window)) return std::move(p->plan);
    return std::nullopt;
  };

  SimResult out;
  out.config = config;
  PlanAt start{0, "initial", planner.plan()};
  for (std::int64_t e = 0; e < c.epochs(); ++e) {
    EpochRun run = run_epoch(c, cost, e, start, config.rebalance_every, replan);
    run.changes = run.replans + (start.plan.changed ? 1 : 0);
    run.next = planner.next(run.basis.empty() ? run.reports : run.basis).plan;
    out.total_s += run.time_s;
    out.ideal_s += run.ideal_s;
    out.changes += run.changes;
    start = {0, "replay", run.next};
    out.epochs.push_back(std::move(run));
  }
  return out;
}

}  // namespace dbs::replay
