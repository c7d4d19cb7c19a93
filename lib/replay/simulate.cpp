// Words: a chunk is a run of consecutive steps under one batch split and one set of costs (no
// slowdown starts or stops inside it, no re-plan falls inside it, the short last step is a chunk
// of its own); the window is the chunks since the last re-plan; a held rank is one a CPU quota
// holds (model.h), whose steps are costed one by one along the epoch's clock (seconds since its
// start; every epoch starts at the start of a quota period with the full grant).
#include "lib/replay/simulate.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <utility>

#include "lib/common/cpu_quota.h"
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
  std::vector<double> rate;  // samples/s per rank (base / F), for the plain rates
  std::vector<double> cost;  // per rank: full-speed work seconds of one step (0 for batch 0)
  // Per rank: the wall seconds of its steps' work, (seconds, steps): one entry for a rank no
  // quota holds, one per distinct run of equal steps for a held one.
  std::vector<std::vector<std::pair<double, std::int64_t>>> wall;
  double critical_s = 0;  // sum over the steps of the slowest rank's wall work
};

// A held rank's quota during an epoch: the end of the current period and the full-speed seconds
// left in it.
struct Quota {
  double end = 0, left = 0;
};

// The wall time at which `work` full-speed seconds started at `now` end under a quota of `share`
// of full speed per period of `period` seconds (model.h).
double run_held(Quota& q, double share, double period, double now, double work) {
  const double grant = share * period;
  if (now >= q.end) {  // idle periods passed: enter the one that holds `now`
    q.end += (std::floor((now - q.end) / period) + 1) * period;
    q.left = grant;
  }
  // Each pass finishes, or spends the grant (throttled to the period's end), or reaches the
  // period's end; then the next period grants anew.
  while (true) {
    const double span = q.end - now;
    if (work <= std::min(q.left, span)) {
      q.left -= work;
      return now + work;
    }
    work -= std::min(q.left, span);
    now = q.end;
    q.end += period;
    q.left = grant;
  }
}

// The expected maximum of independent normal times given as (mean, sd), by Clark's pairwise
// approximation (the maximum of two normals replaced by the normal of its first two moments);
// the largest mean when no time is noisy. 0 for none.
double expected_max(const std::vector<std::pair<double, double>>& times) {
  double mean = 0, var = 0;
  bool first = true;
  for (const auto& [m, sd] : times) {
    if (first) {
      mean = m, var = sd * sd, first = false;
      continue;
    }
    const double theta = std::sqrt(var + sd * sd);
    if (!(theta > 1e-12 * std::max(mean, m))) {
      if (m > mean) mean = m, var = sd * sd;
      continue;
    }
    const double a = (mean - m) / theta;
    const double cdf = 0.5 * std::erfc(-a / std::sqrt(2.0)), tail = 1.0 - cdf;
    const double pdf = std::exp(-0.5 * a * a) / std::sqrt(2.0 * std::numbers::pi);
    const double m1 = mean * cdf + m * tail + theta * pdf;
    const double m2 =
        (mean * mean + var) * cdf + (m * m + sd * sd) * tail + (mean + m) * theta * pdf;
    mean = m1;
    var = std::max(0.0, m2 - m1 * m1);
  }
  return mean;
}

// Costs `ch`'s steps (its batch and cost set), starting at `clock` seconds into the epoch, each
// step followed by `between` seconds (allreduce and overhead); returns the clock after them.
// A step lasts the expected maximum of the ranks' times (expected_max with Cluster::jitter);
// a held rank's time, from its quota's periods, is taken as exact, and its quota also pays
// Cluster::held_outside at the exchange.
double cost_chunk(Chunk& ch, const Cluster& c, std::int64_t e, std::vector<Quota>& quota,
                  double clock, double between) {
  const std::size_t n = ch.batch.size();
  const std::vector<double>* jitter =
      c.jitter.empty() ? nullptr : &c.jitter[static_cast<std::size_t>(e)];
  ch.wall.assign(n, {});
  std::vector<std::pair<double, double>> plain;  // (mean, sd) of the ranks no quota holds
  std::vector<std::size_t> held;
  for (std::size_t i = 0; i < n; ++i) {
    if (ch.batch[i] > 0 && c.held_share(i) > 0) {
      held.push_back(i);
      continue;
    }
    ch.wall[i].emplace_back(ch.cost[i], ch.steps);
    if (ch.batch[i] > 0) plain.emplace_back(ch.cost[i], ch.cost[i] * (jitter ? (*jitter)[i] : 0.0));
  }
  if (held.empty()) {
    ch.critical_s = static_cast<double>(ch.steps) * expected_max(plain);
    return clock + ch.critical_s + static_cast<double>(ch.steps) * between;
  }
  for (std::int64_t k = 0; k < ch.steps; ++k) {
    std::vector<std::pair<double, double>> all = plain;
    for (const std::size_t i : held) {
      const double t = run_held(quota[i], c.held_share(i), c.period_s, clock, ch.cost[i]) - clock;
      auto& w = ch.wall[i];
      if (!w.empty() && w.back().first == t) {
        ++w.back().second;
      } else {
        w.emplace_back(t, 1);
      }
      all.emplace_back(t, 0.0);
    }
    const double longest = expected_max(all);
    ch.critical_s += longest;
    // A held rank's CPU at the exchange runs inside the exchange's time; where its quota runs
    // out there, the exchange waits the throttled time for it: the step's critical path.
    clock += longest;
    double late = 0;
    for (const std::size_t i : held) {
      const double x = c.held_outside_s(i);
      if (x > 0)
        late =
            std::max(late, run_held(quota[i], c.held_share(i), c.period_s, clock, x) - clock - x);
    }
    ch.critical_s += late;
    clock += late + between;
  }
  return clock;
}

// The seconds of one step of `samples` samples split perfectly: the common level T of the
// ranks' costs F_i (alpha_i + beta_i b_i), a held rank's at its sustained rate. Closed form
// when every rank's share is >= 0, else the policy's water level with shares >= 0.
double ideal_step(const Chunk& ch, const Cluster& c, std::int64_t e, int samples) {
  const std::size_t n = ch.batch.size();
  std::vector<policy::Cost> costs(n);
  double inv = 0, fixed = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double share = c.held_share(i) > 0 ? c.held_share(i) : 1.0;
    const double factor = c.base[static_cast<std::size_t>(e)][i] / ch.rate[i] / share;  // F / h
    const double a = c.alpha.empty() ? 0.0 : c.alpha[static_cast<std::size_t>(e)][i];
    costs[i] = {factor * a, factor / c.base[static_cast<std::size_t>(e)][i]};
    inv += 1.0 / costs[i].beta;
    fixed += costs[i].alpha / costs[i].beta;
  }
  const double level = (samples + fixed) / inv;
  bool all_in = true;
  for (const policy::Cost& k : costs) all_in = all_in && level >= k.alpha;
  return all_in ? level : policy::ideal_epoch_time(costs, samples, samples, 0.0);
}

// Rank i's work points over the chunks [from, end): policy::cost_points of its steps' work times
// (a held rank's as the agent measures it, SustainedTime over the steps: its cost at full speed
// stands for the CPU time of full speed and share for the quota's cores), scaled by the
// recorded run's factors (Cluster::work_bias).
std::array<CostPoint, 2> work_of(const Cluster& c, const Cluster::WorkBias& bias,
                                 const std::vector<Chunk>& chunks, std::size_t from,
                                 std::size_t i) {
  if (!bias.reported) return {};
  SustainedTime sustained(c.held_share(i));
  std::vector<std::pair<int, double>> steps;
  for (std::size_t k = from; k < chunks.size(); ++k) {
    const Chunk& ch = chunks[k];
    if (ch.batch[i] <= 0) continue;
    for (const auto& [t, count] : ch.wall[i])
      for (std::int64_t n = 0; n < count; ++n)
        steps.emplace_back(ch.batch[i], sustained.add(t, ch.cost[i]));
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
std::vector<Report> reports_of(const Cluster& c, const std::vector<Chunk>& chunks, std::size_t from,
                               std::int64_t epoch, const Plan& plan, bool with_comm,
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
      r.samples += ch.steps * ch.batch[i];
      r.steps += ch.steps;
      wait += ch.critical_s;
      for (const auto& [t, count] : ch.wall[i]) {
        r.compute_s += static_cast<double>(count) * t;
        wait -= static_cast<double>(count) * t;
        if (ch.batch[i] > 0 && t > 0) rates.emplace_back(ch.batch[i] / t, count);
      }
    }
    if (with_comm) r.comm_s = std::max(0.0, wait) + allreduce_s * static_cast<double>(r.steps);
    r.step_rate_median = policy::median_rate(rates) * (bias != nullptr ? (*bias)[i] : 1.0);
    if (!c.work_bias.empty())
      r.work = work_of(c, c.work_bias[static_cast<std::size_t>(epoch)][i], chunks, from, i);
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
  std::vector<Quota> quota(n);
  double clock = 0;
  std::size_t window_from = 0;
  for (std::int64_t s = 0; s < S;) {
    std::int64_t next = *std::upper_bound(events.begin(), events.end(), s);
    if (K > 0) next = std::min(next, (s / K + 1) * K);
    const std::int64_t gn = std::min(B, N - s * B);
    Chunk ch{s, next - s, step_batch(plan, static_cast<int>(gn)), base, {}, {}, 0};
    for (const Active& a : active) {
      if (a.begin <= s && s < a.end) ch.rate[a.rank] /= a.factor;
    }
    ch.cost.resize(n);
    for (std::size_t i = 0; i < n; ++i)
      ch.cost[i] = c.cost(e, i, ch.batch[i]) * (base[i] / ch.rate[i]);
    clock = cost_chunk(ch, c, e, quota, clock, cost.step_s());
    run.compute_s += ch.critical_s;
    run.ideal_compute_s +=
        static_cast<double>(ch.steps) * ideal_step(ch, c, e, static_cast<int>(gn));
    chunks.push_back(std::move(ch));
    s = next;
    if (K > 0 && s % K == 0 && s < S) {
      const std::vector<Report> window = reports_of(c, chunks, window_from, e, plan, false, 0);
      if (std::optional<Plan> p = replan(plan, s, window)) {
        plan = std::move(*p);
        run.plans.push_back({s, "rebalance", plan});
        ++run.replans;
      }
      window_from = chunks.size();
    }
  }
  run.exchange_s = static_cast<double>(S) * cost.allreduce_s;
  run.overhead_s = static_cast<double>(S) * cost.overhead_s;
  run.time_s = run.compute_s + run.exchange_s + run.overhead_s;
  run.ideal_s = run.ideal_compute_s + run.exchange_s + run.overhead_s;
  run.reports = reports_of(c, chunks, 0, e, plan, true, cost.allreduce_s);
  if (K > 0) run.basis = reports_of(c, chunks, chunk_at(chunks, S - K), e, plan, false, 0);
  return run;
}

SimResult simulate(const Cluster& c, const CostModel& cost, Settings config) {
  config.global_batch = c.global_batch;
  config.samples_per_epoch = c.samples_per_epoch;
  // The planner the agent embeds: its plan in force is the simulated run's plan.
  planner::Embedded planner(config, c.world);
  const Replanner replan = [&planner](const Plan& /*current*/, std::int64_t /*step*/,
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
    out.ideal_compute_s += run.ideal_compute_s;
    out.compute_s += run.compute_s;
    out.exchange_s += run.exchange_s;
    out.overhead_s += run.overhead_s;
    out.changes += run.changes;
    start = {0, "replay", run.next};
    out.epochs.push_back(std::move(run));
  }
  return out;
}

}  // namespace dbs::replay
