#include "lib/replay/fit.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "lib/common/error.h"
#include "lib/common/stats.h"
#include "lib/policy/cost.h"

namespace dbs::replay {
namespace {

// Replaces the zeros of v (unknown) by the same rank's value in the nearest epoch that has one
// (earlier first), else by the mean of the epoch's known ranks, else by 1.
void fill_unknown(std::vector<std::vector<double>>& v) {
  const std::size_t epochs = v.size(), n = epochs > 0 ? v[0].size() : 0;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t e = 0; e < epochs; ++e) {
      if (v[e][i] > 0) continue;
      for (std::size_t d = 1; d < epochs && v[e][i] <= 0; ++d) {
        if (e >= d && v[e - d][i] > 0)
          v[e][i] = v[e - d][i];
        else if (e + d < epochs && v[e + d][i] > 0)
          v[e][i] = v[e + d][i];
      }
    }
  }
  for (std::vector<double>& row : v) {
    double sum = 0;
    int known = 0;
    for (const double x : row) {
      if (x > 0) {
        sum += x;
        ++known;
      }
    }
    for (double& x : row) {
      if (x <= 0) x = known > 0 ? sum / known : 1.0;
    }
  }
}

// [epoch][rank]: the rank's slowdown factor over the epoch when it is the same at every step,
// else 0.
std::vector<std::vector<double>> steady_factors(const Cluster& c) {
  std::vector<std::vector<double>> out;
  for (std::int64_t e = 0; e < c.epochs(); ++e) {
    const std::vector<double>& base = c.base[static_cast<std::size_t>(e)];
    std::vector<double> first = rates_at(c, e, 0);
    for (std::size_t i = 0; i < first.size(); ++i) first[i] = base[i] / first[i];
    for (const std::int64_t s : rate_changes(c, e)) {
      const std::vector<double> v = rates_at(c, e, s);
      for (std::size_t i = 0; i < v.size(); ++i)
        if (base[i] / v[i] != first[i]) first[i] = 0.0;
    }
    out.push_back(std::move(first));
  }
  return out;
}

// Threads per rank from the header (its "threads", 0 or absent: 1).
int threads_of(const Header& h) {
  const auto it = h.config.find("threads");
  if (it == h.config.end() || !it->is_number_integer()) return 1;
  return std::max(1, it->get<int>());
}

// held and period_s from the cpu records: a rank's first recorded quota, as a share of its
// threads when below them.
void quotas(const Trace& trace, Cluster& c) {
  const double threads = threads_of(trace.header);
  std::vector<double> held(static_cast<std::size_t>(c.world), 0.0);
  std::vector<bool> seen(held.size(), false);
  bool any = false;
  for (const EpochRecords& rec : trace.epochs) {
    for (const trace::CpuRecord& r : rec.cpu) {
      const auto i = static_cast<std::size_t>(r.rank);
      if (seen[i] || r.quota_cores <= 0) continue;
      seen[i] = true;
      if (r.quota_cores + 1e-6 < threads) {
        held[i] = r.quota_cores / threads;
        any = true;
      }
      if (r.period_s > 0) c.period_s = r.period_s;
    }
  }
  if (any) c.held = std::move(held);
}

// held_outside from the timing records: per held rank, the median over epochs of its process
// CPU time outside its work (process CPU - busy * quota: the exchange, planning), per step, in
// full-speed seconds (CPU seconds / threads).
void held_outside(const Trace& trace, Cluster& c) {
  if (c.held.empty()) return;
  const double threads = threads_of(trace.header);
  std::vector<std::vector<double>> per_step(c.held.size());
  for (const EpochRecords& rec : trace.epochs)
    for (const trace::TimingRecord& r : rec.timings) {
      const auto i = static_cast<std::size_t>(r.rank);
      const trace::Timing& t = r.timing;
      if (i >= c.held.size() || c.held[i] <= 0 || t.steps <= 0 || t.quota_cores <= 0) continue;
      const double outside = t.process_cpu_s - t.busy_s * t.quota_cores;
      per_step[i].push_back(std::max(0.0, outside) / static_cast<double>(t.steps) / threads);
    }
  c.held_outside.assign(c.held.size(), 0.0);
  for (std::size_t i = 0; i < per_step.size(); ++i)
    if (!per_step[i].empty()) c.held_outside[i] = stats::median(std::move(per_step[i]));
}

// The shape a_i of every rank (fit.h): from its work points of at least kShapeSteps steps in
// epochs where its slowdown factor is steady (steady_factors), divided by that factor.
std::vector<RankFit> shapes(const Trace& trace, const std::vector<std::vector<double>>& steady) {
  std::vector<RankFit> out(static_cast<std::size_t>(trace.header.world));
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::vector<policy::Sample> samples;
    std::map<int, int> sizes;
    for (std::size_t k = 0; k < trace.epochs.size(); ++k) {
      const double f = steady[k][i];
      if (!(f > 0)) continue;
      for (const CostPoint& p : trace.epochs[k].reports[i].work) {
        if (p.batch <= 0 || p.steps < kShapeSteps || !(p.mean_s > 0)) continue;
        samples.push_back(
            {static_cast<double>(p.batch), static_cast<double>(p.steps), p.mean_s / f});
        ++sizes[p.batch];
      }
    }
    RankFit& r = out[i];
    r.sizes = static_cast<int>(sizes.size());
    if (!sizes.empty()) r.min_batch = sizes.begin()->first, r.max_batch = sizes.rbegin()->first;
    if (r.sizes < 2) continue;
    if (const std::optional<policy::Cost> cost = policy::fit_samples(samples)) {
      r.shape = cost->alpha / cost->beta;
    }
  }
  return out;
}

// Of epoch k under the recorded plans: rank i's recorded work over the model's (work points
// matched by batch size, weighted by steps), or 0 when none match.
double work_ratio(const Report& recorded, const Report& model) {
  double rec = 0, mod = 0;
  for (const CostPoint& r : recorded.work) {
    for (const CostPoint& m : model.work) {
      if (r.batch <= 0 || r.batch != m.batch || !(r.mean_s > 0) || !(m.mean_s > 0)) continue;
      rec += static_cast<double>(r.steps) * r.mean_s;
      mod += static_cast<double>(r.steps) * m.mean_s;
    }
  }
  return rec > 0 && mod > 0 ? rec / mod : 0.0;
}

// Rank i's jitter: the median over the epochs in which its slowdown factor is steady of the
// relative standard deviation of its work at its main point (a slowdown that starts inside an
// epoch makes two kinds of steps, not noise; an epoch with a one-off stall, or the first with
// its start-up, has a far larger one that no other step shares); 0 when unknown.
double jitter_of(const Trace& trace, const std::vector<std::vector<double>>& steady,
                 std::size_t i) {
  std::vector<double> rel;
  for (std::size_t k = 0; k < trace.epochs.size(); ++k) {
    const CostPoint& p = trace.epochs[k].reports[i].work[0];
    if (p.steps > 1 && p.mean_s > 0 && steady[k][i] > 0) rel.push_back(p.sd_s / p.mean_s);
  }
  return stats::median(std::move(rel));
}

// Per step: the least comm_s of the ranks (the last to arrive waits least) over the steps, the
// median over the epochs.
double least_comm(const Trace& trace, double steps) {
  std::vector<double> per_epoch;
  for (const EpochRecords& rec : trace.epochs) {
    double least = rec.reports.front().comm_s;
    for (const Report& r : rec.reports) least = std::min(least, r.comm_s);
    per_epoch.push_back(least / steps);
  }
  return stats::median(std::move(per_epoch));
}

// One pass over the epochs under the recorded plans, without allreduce, so that a simulated
// report's comm_s is the model's wait for the slowest rank.
struct RecordedPass {
  std::vector<double> compute_s;  // per epoch: the critical path
  // Per step: the mean over the ranks of what each recorded in comm_s beyond the model's wait,
  // the median over the epochs, within [0, least comm_s]. Every rank's comm_s holds the
  // allreduce; the least one also holds the waits that the ranks' jitter makes, which grow with
  // the step and so differ between the policies.
  double allreduce_s = 0;
  double critical_s() const { return std::accumulate(compute_s.begin(), compute_s.end(), 0.0); }
};

RecordedPass recorded_pass(const Trace& trace, const Cluster& c, double least) {
  RecordedPass out;
  std::vector<double> per_epoch;
  for (std::size_t k = 0; k < trace.epochs.size(); ++k) {
    const EpochRun run = recorded_run(trace, c, CostModel{}, k);
    out.compute_s.push_back(run.compute_s);
    double sum = 0;
    int counted = 0;
    for (std::size_t i = 0; i < run.reports.size(); ++i) {
      const Report& model = run.reports[i];
      if (model.steps <= 0) continue;
      sum += (trace.epochs[k].reports[i].comm_s - model.comm_s) / static_cast<double>(model.steps);
      ++counted;
    }
    if (counted > 0) per_epoch.push_back(sum / counted);
  }
  out.allreduce_s =
      per_epoch.empty() ? least : std::clamp(stats::median(std::move(per_epoch)), 0.0, least);
  return out;
}

// Scales c.jitter down (by bisection on one factor for all ranks) until the critical path of
// the recorded plans and the allreduce fit in the recorded walls (fit.h). The allreduce is held
// at its estimate under the full jitter (RecordedPass::allreduce_s, the least it can be: less
// jitter leaves more of comm_s to it), so that the test grows with the factor and the bisection
// finds the largest that fits: a walls' shortfall of a fraction of a percent takes off as much
// jitter as that shortfall needs, not half of it.
void fit_jitter(const Trace& trace, Cluster& c) {
  if (c.jitter.empty()) return;
  const auto steps = static_cast<double>(c.steps());
  const double least = least_comm(trace, steps);
  double wall = 0;
  for (const EpochRecords& rec : trace.epochs) wall += rec.wall_s;
  const std::vector<std::vector<double>> full = c.jitter;
  const auto scaled = [&](double scale) {
    for (std::size_t e = 0; e < full.size(); ++e)
      for (std::size_t i = 0; i < full[e].size(); ++i) c.jitter[e][i] = scale * full[e][i];
    return recorded_pass(trace, c, least);
  };
  const RecordedPass at_full = scaled(1.0);
  const double exchange =
      at_full.allreduce_s * steps * static_cast<double>(at_full.compute_s.size());
  const auto fits = [&](double scale) { return scaled(scale).critical_s() + exchange <= wall; };
  if (at_full.critical_s() + exchange <= wall) return;
  double lo = 0, hi = 1;
  for (int k = 0; k < 30; ++k) {
    const double mid = 0.5 * (lo + hi);
    (fits(mid) ? lo : hi) = mid;
  }
  scaled(lo);
}

bool has_work(const Trace& trace) {
  for (const EpochRecords& rec : trace.epochs)
    for (const Report& r : rec.reports)
      if (r.work[0].batch > 0) return true;
  return false;
}

// Factors 1 for every rank and point: a cluster whose simulated reports carry the model's own
// work points.
std::vector<std::vector<Cluster::WorkBias>> unit_bias(std::size_t epochs, int world) {
  return {epochs, std::vector<Cluster::WorkBias>(static_cast<std::size_t>(world),
                                                 Cluster::WorkBias{true, {1.0, 1.0}, {0.0, 0.0}})};
}

// Cluster::work_bias of the trace (empty when no rank record has work times): the recorded
// work points over the model's under the recorded plans, matched by batch size.
std::vector<std::vector<Cluster::WorkBias>> work_bias(const Trace& trace, const Cluster& c) {
  if (!has_work(trace)) return {};
  Cluster unit = c;
  unit.work_bias = unit_bias(trace.epochs.size(), c.world);
  std::vector<std::vector<Cluster::WorkBias>> out;
  for (std::size_t k = 0; k < trace.epochs.size(); ++k) {
    const EpochRun run = recorded_run(trace, unit, CostModel{}, k);
    std::vector<Cluster::WorkBias> epoch(static_cast<std::size_t>(c.world));
    for (std::size_t i = 0; i < epoch.size(); ++i) {
      const auto& recorded = trace.epochs[k].reports[i].work;
      const auto& model = run.reports[i].work;
      Cluster::WorkBias& b = epoch[i];
      b.reported = recorded[0].batch > 0;
      std::array<bool, 2> matched{};
      for (std::size_t p = 0; p < model.size(); ++p) {
        for (const CostPoint& r : recorded) {
          if (r.batch == 0 || r.batch != model[p].batch || !(model[p].mean_s > 0) ||
              !(r.mean_s > 0))
            continue;
          b.mean[p] = r.mean_s / model[p].mean_s;
          b.sd[p] = r.sd_s / r.mean_s;
          matched[p] = true;
        }
      }
      if (!matched[1]) b.mean[1] = b.mean[0], b.sd[1] = b.sd[0];
    }
    out.push_back(std::move(epoch));
  }
  return out;
}

}  // namespace

EpochRun recorded_run(const Trace& trace, const Cluster& cluster, const CostModel& cost,
                      std::size_t k) {
  const EpochRecords& rec = trace.epochs[k];
  std::size_t next = 1;
  const Replanner replay_recorded = [&rec, &next](
                                        const Plan& /*current*/, std::int64_t step,
                                        std::span<const Report> /*window*/) -> std::optional<Plan> {
    if (next < rec.plans.size() && rec.plans[next].step == step) {
      Plan p = rec.plans[next++].plan;
      p.epoch = rec.epoch;
      return p;
    }
    return std::nullopt;
  };
  PlanAt start = rec.plans.front();
  start.plan.epoch = rec.epoch;
  return run_epoch(cluster, cost, static_cast<std::int64_t>(k), start,
                   recorded_interval(rec, trace.header.settings.rebalance_every), replay_recorded);
}

int recorded_interval(const EpochRecords& epoch, int rebalance_every) {
  std::int64_t k = rebalance_every;
  for (std::size_t j = 1; j < epoch.plans.size(); ++j) k = std::gcd(k, epoch.plans[j].step);
  return static_cast<int>(k);
}

Cluster cluster_from_trace(const Trace& trace, std::vector<RankFit>* fits) {
  const Header& h = trace.header;
  const std::size_t epochs = trace.epochs.size(), n = static_cast<std::size_t>(h.world);
  Cluster c;
  c.world = h.world;
  c.global_batch = h.settings.global_batch;
  c.samples_per_epoch = h.settings.samples_per_epoch;
  c.slowdowns = slowdowns_of(trace);
  quotas(trace, c);
  held_outside(trace, c);
  const bool work = has_work(trace);

  // Unit levels (beta 1, alpha a_i): the model's work under the recorded plans, to be scaled.
  Cluster unit = c;
  unit.held.clear();
  unit.base.assign(epochs, std::vector<double>(n, 1.0));
  const std::vector<std::vector<double>> steady =
      work ? steady_factors(unit) : std::vector<std::vector<double>>{};
  std::vector<RankFit> ranks = work ? shapes(trace, steady) : std::vector<RankFit>(n);
  if (work) {
    unit.alpha.assign(epochs, std::vector<double>(n, 0.0));
    for (std::size_t e = 0; e < epochs; ++e)
      for (std::size_t i = 0; i < n; ++i) unit.alpha[e][i] = ranks[i].shape;
    unit.work_bias = unit_bias(epochs, c.world);
  }
  for (std::size_t k = 0; k < epochs; ++k) {
    const EpochRun run = recorded_run(trace, unit, CostModel{}, k);
    std::vector<double> base(n, 0.0);
    for (std::size_t i = 0; i < n; ++i) {
      const Report& rec = trace.epochs[k].reports[i];
      const Report& model = run.reports[i];
      if (work) {
        const double ratio = work_ratio(rec, model);  // seconds per unit of the unit model
        if (ratio > 0) base[i] = 1.0 / ratio;
      } else if (model.compute_s > 0 && rec.compute_s > 0 && rec.samples > 0) {
        base[i] = model.compute_s / rec.compute_s;
      }
    }
    c.base.push_back(std::move(base));
  }
  fill_unknown(c.base);
  // A held rank's recorded work is sustained (cost / held): its cost at full speed is held
  // times that.
  for (std::size_t i = 0; i < c.held.size(); ++i) {
    ranks[i].held = c.held[i];
    if (c.held[i] > 0)
      for (std::vector<double>& v : c.base) v[i] /= c.held[i];
  }
  if (work) {
    c.alpha.assign(epochs, std::vector<double>(n, 0.0));
    c.jitter.assign(epochs, std::vector<double>(n, 0.0));
    for (std::size_t i = 0; i < n; ++i) {
      const double jitter = c.held_share(i) == 0 ? jitter_of(trace, steady, i) : 0.0;
      for (std::size_t e = 0; e < epochs; ++e) {
        c.alpha[e][i] = ranks[i].shape / c.base[e][i];
        c.jitter[e][i] = jitter;
      }
    }
    fit_jitter(trace, c);
  }
  // The median bias: the recorded median step rate over the one the model gives under the
  // recorded plans (1 where either is unknown).
  std::vector<std::vector<double>> median_bias;  // filled after the runs that read c
  for (std::size_t k = 0; k < epochs; ++k) {
    const EpochRun run = recorded_run(trace, c, CostModel{}, k);
    std::vector<double> bias(n, 1.0);
    for (std::size_t i = 0; i < n; ++i) {
      const double measured = trace.epochs[k].reports[i].step_rate_median;
      const double model = run.reports[i].step_rate_median;
      if (measured > 0 && model > 0) bias[i] = measured / model;
    }
    median_bias.push_back(std::move(bias));
  }
  c.median_bias = std::move(median_bias);
  c.work_bias = work_bias(trace, c);
  if (fits != nullptr) *fits = std::move(ranks);
  return c;
}

Fit fit_cost(const Trace& trace, const Cluster& cluster, const CostOptions& options) {
  Fit f;
  const int world = cluster.world;
  const auto steps = static_cast<double>(cluster.steps());
  const RecordedPass pass = recorded_pass(trace, cluster, least_comm(trace, steps));
  f.recorded_compute_s = pass.compute_s;
  double wall = 0;
  for (const EpochRecords& rec : trace.epochs) wall += rec.wall_s;
  // What the walls hold per step beyond the critical path; the allreduce cannot exceed it.
  const double unexplained =
      std::max(0.0, (wall - pass.critical_s()) / (steps * trace.epochs.size()));
  f.measured_allreduce_s = std::min(pass.allreduce_s, unexplained);
  f.fitted_overhead_s = unexplained - f.measured_allreduce_s;

  CostModel& m = f.cost;
  m.algorithm = options.algorithm;
  m.bytes = trace.header.params > 0 ? allreduce_bytes(trace.header.params, world) : 0.0;
  f.latency_given = options.latency_s.has_value();
  f.bandwidth_given = options.bandwidth.has_value();
  f.overhead_given = options.overhead_s.has_value();
  m.latency_s = world > 1 ? options.latency_s.value_or(kDefaultLatency) : 0.0;
  if (f.bandwidth_given) {
    m.bandwidth = *options.bandwidth;
    m.allreduce_s = allreduce_s(m.algorithm, world, m.bytes, m.latency_s, m.bandwidth);
  } else if (world <= 1) {
    m.allreduce_s = f.measured_allreduce_s;  // a copy, no messages
  } else {
    const double messages = allreduce_messages(m.algorithm, world);
    const double rest = f.measured_allreduce_s - messages * m.latency_s;
    if (rest > 0 && m.bytes > 0) {
      m.bandwidth = allreduce_volume(m.algorithm, world) * m.bytes / rest;
      m.allreduce_s = f.measured_allreduce_s;
    } else if (f.latency_given) {
      m.allreduce_s = allreduce_s(m.algorithm, world, m.bytes, m.latency_s, 0.0);
    } else {
      m.latency_s = f.measured_allreduce_s / messages;  // all of it is latency
      m.allreduce_s = f.measured_allreduce_s;
    }
  }
  m.overhead_s = options.overhead_s.value_or(f.fitted_overhead_s);
  return f;
}

}  // namespace dbs::replay
