#include "lib/replay/summary.h"

#include <algorithm>

#include "lib/common/format.h"

namespace dbs::replay {
namespace {

std::string seconds(double s) {
  return format(s < 1e5 ? "%.3f" : "%.0f", s);
}

std::string duration(double s) {
  if (s * 1e6 < 999.95) return format("%.1f us", s * 1e6);
  if (s < 1.0) return format("%.2f ms", s * 1e3);
  return format("%.3f s", s);
}

std::string bytes_per_s(double b) {
  if (b <= 0) return "infinite";
  if (b >= 1e9) return format("%.2f GB/s", b / 1e9);
  return format("%.1f MB/s", b / 1e6);
}

std::string percent(double x) {
  return format("%+.1f%%", 100 * x);
}

// Rows of cells printed in columns: the first left-aligned, the others right-aligned.
class Table {
 public:
  void row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  std::string str() const {
    std::vector<std::size_t> width;
    for (const auto& r : rows_) {
      width.resize(std::max(width.size(), r.size()), 0);
      for (std::size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
    }
    std::string out;
    for (const auto& r : rows_) {
      std::string line;
      for (std::size_t c = 0; c < r.size(); ++c) {
        const std::string pad(width[c] - r[c].size(), ' ');
        line += c == 0 ? r[c] + pad : "  " + pad + r[c];
      }
      out += line.substr(0, line.find_last_not_of(' ') + 1) + "\n";
    }
    return out;
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

std::string settings(const Settings& c) {
  std::string s = c.rebalance_every > 0 ? format("re-plan every %d steps", c.rebalance_every)
                                        : std::string("re-plan per epoch");
  return s + format(", min gain %.3g%%, batch per rank %d..%s", 100 * c.min_gain, c.min_batch,
                    c.max_batch > 0 ? std::to_string(c.max_batch).c_str() : "B");
}

// Where the time goes, in seconds: balanced (every step split perfectly), imbalance, exchange,
// overhead; total = their sum.
struct Breakdown {
  double balanced = 0, imbalance = 0, exchange = 0, overhead = 0;
  double total() const { return balanced + imbalance + exchange + overhead; }
};

Breakdown breakdown(const EpochRun& x) {
  return {x.ideal_compute_s, x.compute_s - x.ideal_compute_s, x.exchange_s, x.overhead_s};
}

Breakdown breakdown(const SimResult& x) {
  return {x.ideal_compute_s, x.compute_s - x.ideal_compute_s, x.exchange_s, x.overhead_s};
}

// The recorded run's: its critical path under the recorded plans (the fit's) against the same
// balanced compute, the model's exchange, and the rest of its wall time as overhead.
Breakdown recorded_breakdown(const Replay& r) {
  Breakdown b;
  const auto steps = static_cast<double>(r.cluster.steps());
  for (std::size_t e = 0; e < r.recorded_s.size(); ++e) {
    const double balanced = r.baseline.epochs[e].ideal_compute_s;
    b.balanced += balanced;
    b.imbalance += r.fit.recorded_compute_s[e] - balanced;
    b.exchange += steps * r.fit.cost.allreduce_s;
  }
  b.overhead = r.recorded_total_s - b.balanced - b.imbalance - b.exchange;
  return b;
}

std::vector<std::string> cells(const Breakdown& b) {
  return {seconds(b.balanced), seconds(b.imbalance), seconds(b.exchange), seconds(b.overhead),
          seconds(b.total())};
}

std::string where_the_time_goes(const Replay& r) {
  Table t;
  t.row({"where the time goes (s)", "balanced", "imbalance", "exchange", "overhead", "total"});
  for (const SimResult& res : r.results) {
    std::vector<std::string> row{to_string(res.config.policy)};
    for (std::string& c : cells(breakdown(res))) row.push_back(std::move(c));
    t.row(row);
  }
  std::vector<std::string> row{"recorded (" + to_string(r.header.settings.policy) + ")"};
  for (std::string& c : cells(recorded_breakdown(r))) row.push_back(std::move(c));
  t.row(row);
  return t.str() +
         "balanced: every step split in proportion to the ranks' speeds; imbalance: the slowest "
         "rank's excess over it\n";
}

std::string single(const Replay& r) {
  const SimResult& res = r.results.front();
  const bool rec = r.recorded == 0;
  Table t;
  std::vector<std::string> head{"epoch",    "time_s",    "ideal_s",  "efficiency", "changes",
                                "balanced", "imbalance", "exchange", "overhead",   "recorded_s"};
  if (rec) head.push_back("error");
  t.row(head);
  const auto row_of = [](std::vector<std::string> row, const Breakdown& b) {
    for (const double x : {b.balanced, b.imbalance, b.exchange, b.overhead})
      row.push_back(seconds(x));
    return row;
  };
  for (std::size_t e = 0; e < res.epochs.size(); ++e) {
    const EpochRun& x = res.epochs[e];
    std::vector<std::string> row =
        row_of({std::to_string(e + 1), seconds(x.time_s), seconds(x.ideal_s),
                format("%.3f", x.ideal_s / x.time_s), std::to_string(x.changes)},
               breakdown(x));
    row.push_back(seconds(r.recorded_s[e]));
    if (rec) row.push_back(percent((x.time_s - r.recorded_s[e]) / r.recorded_s[e]));
    t.row(row);
  }
  std::vector<std::string> total =
      row_of({"total", seconds(res.total_s), seconds(res.ideal_s), format("%.3f", res.efficiency()),
              std::to_string(res.changes)},
             breakdown(res));
  total.push_back(seconds(r.recorded_total_s));
  if (rec) total.push_back(percent(r.error()));
  t.row(total);
  std::string out =
      "policy " + to_string(res.config.policy) + ": " + settings(res.config) + "\n" + t.str();
  out +=
      "balanced + imbalance + exchange + overhead = time_s: balanced is every step split in "
      "proportion to the ranks' speeds, imbalance the slowest rank's excess over it\n";
  out += format("speedup over static: %.3fx (static %s s)\n", r.speedup(res),
                seconds(r.baseline.total_s).c_str());
  if (rec) {
    out += format("the simulated policy ran the recorded plans in %d of %zu epochs\n",
                  r.plans_matched, res.epochs.size());
  }
  return out;
}

std::string compare(const Replay& r) {
  Table t;
  std::vector<std::string> head{"epoch"};
  for (const SimResult& res : r.results) head.push_back(to_string(res.config.policy));
  head.insert(head.end(), {"ideal_s", "recorded_s"});
  t.row(head);
  const SimResult& first = r.results.front();
  for (std::size_t e = 0; e < first.epochs.size(); ++e) {
    std::vector<std::string> row{std::to_string(e + 1)};
    for (const SimResult& res : r.results) row.push_back(seconds(res.epochs[e].time_s));
    row.insert(row.end(), {seconds(first.epochs[e].ideal_s), seconds(r.recorded_s[e])});
    t.row(row);
  }
  std::vector<std::string> total{"total"}, eff{"efficiency"}, changes{"changes"}, speed{"speedup"};
  for (const SimResult& res : r.results) {
    total.push_back(seconds(res.total_s));
    eff.push_back(format("%.3f", res.efficiency()));
    changes.push_back(std::to_string(res.changes));
    speed.push_back(format("%.3fx", r.speedup(res)));
  }
  total.insert(total.end(), {seconds(first.ideal_s), seconds(r.recorded_total_s)});
  for (auto* row : {&total, &eff, &changes, &speed}) t.row(*row);
  std::string out = "policies side by side: " + settings(first.config) + "\n" + t.str();
  out += "speedup: static's total time over the policy's";
  if (std::none_of(r.results.begin(), r.results.end(), [](const SimResult& x) {
        return x.config.policy.kind == PolicySpec::Kind::equal_split;
      })) {
    out += format(" (static: %s s)", seconds(r.baseline.total_s).c_str());
  }
  out += "\n";
  if (r.recorded >= 0) {
    out += format(
        "recorded run (policy %s): simulated %s s, recorded %s s, error %s; same "
        "plans in %d of %zu epochs\n",
        to_string(r.header.settings.policy).c_str(),
        seconds(r.results[static_cast<std::size_t>(r.recorded)].total_s).c_str(),
        seconds(r.recorded_total_s).c_str(), percent(r.error()).c_str(), r.plans_matched,
        first.epochs.size());
  }
  return out + "\n" + where_the_time_goes(r);
}

}  // namespace

std::string describe_model(const Replay& r) {
  const Fit& f = r.fit;
  const CostModel& m = f.cost;
  std::string s = "step time = slowest rank's work + allreduce " + duration(m.allreduce_s);
  if (r.header.world > 1) {
    const std::string model = std::string(to_string(m.algorithm)) + " model";
    s += f.bandwidth_given ? " (" + model
                           : " (measured " + duration(f.measured_allreduce_s) + "; " + model;
    s += ": latency " + duration(m.latency_s) + (f.latency_given ? " given" : " assumed") +
         ", bandwidth " + bytes_per_s(m.bandwidth) + (f.bandwidth_given ? " given" : " fitted");
    if (m.bytes > 0) s += format(", %.2f MB per step", m.bytes / 1e6);
    s += ")";
  }
  s += " + overhead " + duration(m.overhead_s) + (f.overhead_given ? " (given)" : " (fitted)");
  return s;
}

std::string describe_ranks(const Replay& r) {
  const Cluster& c = r.cluster;
  const std::vector<RankFit>& fits = r.fit.ranks;
  if (fits.empty() || c.epochs() == 0) return "";
  const auto last = static_cast<std::size_t>(c.epochs() - 1);
  const bool fixed_costs = !c.alpha.empty();
  std::string out = fixed_costs ? "work per step, alpha + beta * b (last epoch):"
                                : "work per step in proportion to the batch (no work times "
                                  "in the trace; update and gathering are in the overhead):";
  const auto held = [&](std::size_t i) {
    if (!(fits[i].held > 0)) return std::string();
    std::string s = format(", held by its CPU quota to %.3g%% of full speed in %s periods",
                           100 * fits[i].held, duration(c.period_s).c_str());
    if (c.held_outside_s(i) > 0)
      s += ", paying " + duration(c.held_outside_s(i)) + " of it a step at the exchange";
    return s + " (times at full speed)";
  };
  if (fits.size() <= 8) {
    for (std::size_t i = 0; i < fits.size(); ++i) {
      const double beta = 1.0 / c.base[last][i];
      const double alpha = fixed_costs ? c.alpha[last][i] : 0.0;
      out += format("\n  rank %zu: %s + %s/sample", i, duration(alpha).c_str(),
                    duration(beta).c_str());
      if (fixed_costs) {
        out += fits[i].sizes >= 2 ? format(" (fixed cost fitted from batch sizes %d-%d)",
                                           fits[i].min_batch, fits[i].max_batch)
                                  : std::string(" (one batch size: proportional assumed)");
      }
      out += held(i);
    }
    return out + "\n";
  }
  int fitted = 0, held_ranks = 0;
  for (const RankFit& f : fits) {
    fitted += f.sizes >= 2 ? 1 : 0;
    held_ranks += f.held > 0 ? 1 : 0;
  }
  if (fixed_costs) {
    out += format(
        " fixed cost fitted for %d of %zu ranks (the others ran one batch size: "
        "proportional assumed)",
        fitted, fits.size());
  }
  if (held_ranks > 0) out += format("; %d ranks held by CPU quotas", held_ranks);
  return out + "\n";
}

std::string text_summary(const Replay& r) {
  const Header& h = r.header;
  std::string out = format(
      "replay of %s: %d ranks, global batch %d, %lld samples per epoch (%lld steps), %d "
      "epochs, recorded with policy %s\n",
      r.path.c_str(), h.world, h.settings.global_batch,
      static_cast<long long>(h.settings.samples_per_epoch),
      static_cast<long long>(r.cluster.steps()), r.cluster.epochs(),
      to_string(h.settings.policy).c_str());
  out += "model: " + describe_model(r) + "\n" + describe_ranks(r);
  out +=
      "ideal: every step split in proportion to the throughputs, plus allreduce and overhead\n\n";
  out += r.results.size() == 1 ? single(r) : compare(r);
  return out;
}

nlohmann::json json_summary(const Replay& r) {
  const auto where = [](const Breakdown& b) {
    return nlohmann::json{{"balanced_s", b.balanced},
                          {"imbalance_s", b.imbalance},
                          {"exchange_s", b.exchange},
                          {"overhead_s", b.overhead}};
  };
  nlohmann::json out = nlohmann::json::object();
  for (std::size_t k = 0; k < r.results.size(); ++k) {
    const SimResult& res = r.results[k];
    nlohmann::json epochs = nlohmann::json::array();
    for (std::size_t e = 0; e < res.epochs.size(); ++e) {
      const EpochRun& x = res.epochs[e];
      epochs.push_back({{"epoch", e + 1},
                        {"time_s", x.time_s},
                        {"ideal_s", x.ideal_s},
                        {"efficiency", x.ideal_s / x.time_s},
                        {"changes", x.changes},
                        {"where", where(breakdown(x))}});
    }
    nlohmann::json j = {{"total_s", res.total_s},
                        {"ideal_s", res.ideal_s},
                        {"efficiency", res.efficiency()},
                        {"speedup_vs_static", r.speedup(res)},
                        {"plan_changes", res.changes},
                        {"rebalance_every", res.config.rebalance_every},
                        {"allreduce_s", r.fit.cost.allreduce_s},
                        {"overhead_s", r.fit.cost.overhead_s},
                        {"where", where(breakdown(res))},
                        {"epochs", epochs}};
    if (static_cast<int>(k) == r.recorded) {
      j["recorded_total_s"] = r.recorded_total_s;
      j["recorded_where"] = where(recorded_breakdown(r));
      j["error"] = r.error();
      j["plans_matched"] = r.plans_matched;
    }
    out[to_string(res.config.policy)] = j;
  }
  return out;
}

}  // namespace dbs::replay
