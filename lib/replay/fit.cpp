#include "lib/replay/fit.h"

#include <algorithm>
#include <numeric>

#include "lib/common/error.h"
#include "lib/common/stats.h"
#include "lib/replay/simulate.h"

namespace dbs::replay {
namespace {

// Runs epoch k of the trace under its recorded plans.
EpochRun recorded_run(const Trace& trace, const Cluster& cluster, const CostModel& cost,
                      std::size_t k) {
  const EpochRecords& rec = trace.epochs[k];
  std::size_t next = 1;
  const Replanner replay_recorded =
      [&rec, &next](const Plan& /*current*/, std::int64_t step,
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

// Replaces the zeros of base (unknown) by the same rank's value in the nearest epoch that has
// one (earlier first), else by the mean of the epoch's known ranks, else by 1.
void fill_unknown(std::vector<std::vector<double>>& base) {
  const std::size_t epochs = base.size(), n = epochs > 0 ? base[0].size() : 0;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t e = 0; e < epochs; ++e) {
      if (base[e][i] > 0) continue;
      for (std::size_t d = 1; d < epochs && base[e][i] <= 0; ++d) {
        if (e >= d && base[e - d][i] > 0)
          base[e][i] = base[e - d][i];
        else if (e + d < epochs && base[e + d][i] > 0)
          base[e][i] = base[e + d][i];
      }
    }
  }
  for (std::vector<double>& v : base) {
    double sum = 0;
    int known = 0;
    for (const double x : v) {
      if (x > 0) {
        sum += x;
        ++known;
      }
    }
    for (double& x : v) {
      if (x <= 0) x = known > 0 ? sum / known : 1.0;
    }
  }
}

// Cluster::work_bias of the trace (empty when no rank record has work times): the recorded
// work points over the model's under the recorded plans, matched by batch size.
std::vector<std::vector<Cluster::WorkBias>> work_bias(const Trace& trace, const Cluster& c) {
  bool any = false;
  for (const EpochRecords& rec : trace.epochs)
    for (const Report& r : rec.reports) any = any || r.work[0].batch > 0;
  if (!any) return {};
  // Factors 1: the model's own work points.
  Cluster unit = c;
  unit.work_bias.assign(trace.epochs.size(),
                        std::vector<Cluster::WorkBias>(static_cast<std::size_t>(c.world),
                                                       Cluster::WorkBias{true, {1.0, 1.0}, {0.0, 0.0}}));
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
          if (r.batch == 0 || r.batch != model[p].batch || !(model[p].mean_s > 0) || !(r.mean_s > 0)) continue;
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

int recorded_interval(const EpochRecords& epoch, int rebalance_every) {
  std::int64_t k = rebalance_every;
  for (std::size_t j = 1; j < epoch.plans.size(); ++j) k = std::gcd(k, epoch.plans[j].step);
  return static_cast<int>(k);
}

Cluster cluster_from_trace(const Trace& trace) {
  const Header& h = trace.header;
  Cluster c;
  c.world = h.world;
  c.global_batch = h.settings.global_batch;
  c.samples_per_epoch = h.settings.samples_per_epoch;
  c.slowdowns = slowdowns_of(trace);
  const auto n = static_cast<std::size_t>(h.world);
  // With every base rate 1, a rank's simulated compute time is sum_s b_i(s) * F_i(s).
  Cluster unit = c;
  unit.base.assign(trace.epochs.size(), std::vector<double>(n, 1.0));
  for (std::size_t k = 0; k < trace.epochs.size(); ++k) {
    const EpochRun run = recorded_run(trace, unit, CostModel{}, k);
    std::vector<double> base(n, 0.0);
    for (std::size_t i = 0; i < n; ++i) {
      const double weighted = run.reports[i].compute_s;
      const double measured = trace.epochs[k].reports[i].compute_s;
      if (weighted > 0 && measured > 0 && trace.epochs[k].reports[i].samples > 0) {
        base[i] = weighted / measured;
      }
    }
    c.base.push_back(std::move(base));
  }
  fill_unknown(c.base);
  // The median bias: the recorded median step rate over the one the model gives under the
  // recorded plans (1 where either is unknown).
  std::vector<std::vector<double>> median_bias;  // filled after the runs that read c
  for (std::size_t k = 0; k < trace.epochs.size(); ++k) {
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
  return c;
}

Fit fit_cost(const Trace& trace, const Cluster& cluster, const CostOptions& options) {
  Fit f;
  const int world = cluster.world;
  const auto steps = static_cast<double>(cluster.steps());
  std::vector<double> per_epoch;
  double wall = 0, critical = 0;
  for (std::size_t k = 0; k < trace.epochs.size(); ++k) {
    const EpochRecords& rec = trace.epochs[k];
    double least = rec.reports.front().comm_s;
    for (const Report& r : rec.reports) least = std::min(least, r.comm_s);
    per_epoch.push_back(least / steps);
    f.recorded_compute_s.push_back(recorded_run(trace, cluster, CostModel{}, k).compute_s);
    wall += rec.wall_s;
    critical += f.recorded_compute_s.back();
  }
  // What the walls hold per step beyond the critical path; the allreduce cannot exceed it.
  const double unexplained = std::max(0.0, (wall - critical) / (steps * trace.epochs.size()));
  f.measured_allreduce_s = std::min(stats::median(per_epoch), unexplained);
  f.fitted_overhead_s = unexplained - f.measured_allreduce_s;

  CostModel& m = f.cost;
  m.bytes = trace.header.params > 0 ? allreduce_bytes(trace.header.params, world) : 0.0;
  f.latency_given = options.latency_s.has_value();
  f.bandwidth_given = options.bandwidth.has_value();
  f.overhead_given = options.overhead_s.has_value();
  m.latency_s = world > 1 ? options.latency_s.value_or(kDefaultLatency) : 0.0;
  if (f.bandwidth_given) {
    m.bandwidth = *options.bandwidth;
    m.allreduce_s = ring_allreduce_s(world, m.bytes, m.latency_s, m.bandwidth);
  } else if (world <= 1) {
    m.allreduce_s = f.measured_allreduce_s;  // a copy, no messages
  } else {
    const double hops = 2.0 * (world - 1);
    const double rest = f.measured_allreduce_s - hops * m.latency_s;
    if (rest > 0 && m.bytes > 0) {
      m.bandwidth = hops / world * m.bytes / rest;
      m.allreduce_s = f.measured_allreduce_s;
    } else if (f.latency_given) {
      m.allreduce_s = ring_allreduce_s(world, m.bytes, m.latency_s, 0.0);
    } else {
      m.latency_s = f.measured_allreduce_s / hops;  // all of it is latency
      m.allreduce_s = f.measured_allreduce_s;
    }
  }
  m.overhead_s = options.overhead_s.value_or(f.fitted_overhead_s);
  return f;
}

}  // namespace dbs::replay
