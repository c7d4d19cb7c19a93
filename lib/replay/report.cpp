#include "lib/replay/report.h"

#include <utility>

#include "lib/chart/chart.h"
#include "lib/chart/page.h"
#include "lib/common/format.h"
#include "lib/replay/summary.h"

namespace dbs::replay {
namespace {

// A per-rank quantity over the run, piecewise constant: values[k] (one per rank) holds over
// [x[k], x[k+1]) in 1-based fractional epochs.
struct Pieces {
  std::vector<double> x;
  std::vector<std::vector<double>> values;
};

std::string fixed(double x) {
  return format("%.3f", x);
}

chart::Series series(std::string label, std::string color, std::vector<double> x,
                     std::vector<double> y = {}) {
  chart::Series s;
  s.label = std::move(label);
  s.color = std::move(color);
  s.x = std::move(x);
  s.y = std::move(y);
  return s;
}

std::vector<chart::Series> per_rank(const Pieces& p) {
  return chart::per_rank(p.x, p.values, true);
}

Pieces throughput_pieces(const Cluster& c) {
  Pieces p;
  const auto S = static_cast<double>(c.steps());
  for (std::int64_t e = 0; e < c.epochs(); ++e) {
    std::vector<std::int64_t> starts{0};
    for (const std::int64_t s : rate_changes(c, e)) starts.push_back(s);
    for (const std::int64_t s : starts) {
      p.x.push_back(static_cast<double>(e + 1) + static_cast<double>(s) / S);
      p.values.push_back(rates_at(c, e, s));
    }
  }
  p.x.push_back(c.epochs() + 1.0);
  return p;
}

Pieces batch_pieces(const SimResult& r, const Cluster& c) {
  Pieces p;
  const auto S = static_cast<double>(c.steps());
  for (std::size_t e = 0; e < r.epochs.size(); ++e) {
    for (const PlanAt& at : r.epochs[e].plans) {
      p.x.push_back(static_cast<double>(e + 1) + static_cast<double>(at.step) / S);
      p.values.emplace_back(at.plan.batch.begin(), at.plan.batch.end());
    }
  }
  p.x.push_back(static_cast<double>(r.epochs.size()) + 1.0);
  return p;
}

std::string time_chart(const Replay& r) {
  chart::Chart c{"Epoch time per policy against ideal", "epoch", "seconds", {}, true};
  std::vector<double> x;
  for (std::size_t e = 0; e < r.recorded_s.size(); ++e) x.push_back(static_cast<double>(e + 1));
  for (std::size_t k = 0; k < r.results.size(); ++k) {
    chart::Series s = series(to_string(r.results[k].config.policy), chart::color(k), x);
    for (const EpochRun& e : r.results[k].epochs) s.y.push_back(e.time_s);
    s.markers = true;
    c.series.push_back(std::move(s));
  }
  chart::Series ideal = series("ideal", "#777777", x);
  for (const EpochRun& e : r.results.front().epochs) ideal.y.push_back(e.ideal_s);
  ideal.dash = "5,4";
  c.series.push_back(std::move(ideal));
  chart::Series rec =
      series("recorded (" + to_string(r.header.settings.policy) + ")", "#000000", x, r.recorded_s);
  rec.dash = "5,4";
  rec.markers = true;
  c.series.push_back(std::move(rec));
  return chart::render(c);
}

std::string summary_table(const Replay& r) {
  std::string t =
      "<table><tr><th>policy</th><th>total s</th><th>ideal s</th><th>efficiency</th>"
      "<th>plan changes</th><th>speedup over static</th></tr>\n";
  for (const SimResult& res : r.results) {
    t += "<tr><td>" + chart::escape(to_string(res.config.policy)) + "</td><td>" +
         fixed(res.total_s) + "</td><td>" + fixed(res.ideal_s) + "</td><td>" +
         fixed(res.efficiency()) + "</td><td>" + std::to_string(res.changes) + "</td><td>" +
         fixed(r.speedup(res)) + "x</td></tr>\n";
  }
  t += "<tr><td>recorded run (" + chart::escape(to_string(r.header.settings.policy)) +
       ")</td><td>" + fixed(r.recorded_total_s) + "</td><td></td><td></td><td></td><td>" +
       (r.recorded >= 0 ? "replay error " + format("%.1f", 100 * r.error()) + "%" : std::string()) +
       "</td></tr>\n";
  return t + "</table>\n";
}

std::string epoch_table(const Replay& r) {
  std::string t = "<table><tr><th>epoch</th>";
  for (const SimResult& res : r.results) {
    t += "<th>" + chart::escape(to_string(res.config.policy)) + " s</th><th>changes</th>";
  }
  t += "<th>ideal s</th><th>recorded s</th></tr>\n";
  for (std::size_t e = 0; e < r.recorded_s.size(); ++e) {
    t += "<tr><td>" + std::to_string(e + 1) + "</td>";
    for (const SimResult& res : r.results) {
      t += "<td>" + fixed(res.epochs[e].time_s) + "</td><td>" +
           std::to_string(res.epochs[e].changes) + "</td>";
    }
    t += "<td>" + fixed(r.results.front().epochs[e].ideal_s) + "</td><td>" +
         fixed(r.recorded_s[e]) + "</td></tr>\n";
  }
  return t + "</table>\n";
}

// Stacked bands per epoch of one policy's time: balanced compute, imbalance, exchange, overhead.
std::string where_chart(const SimResult& res) {
  chart::Chart c{
      "Where the time goes: " + to_string(res.config.policy), "epoch", "seconds", {}, true};
  std::vector<double> x;
  for (std::size_t e = 0; e <= res.epochs.size(); ++e) x.push_back(static_cast<double>(e + 1));
  const char* names[] = {"balanced compute", "imbalance", "exchange", "overhead"};
  std::vector<double> low(res.epochs.size(), 0.0);
  for (std::size_t part = 0; part < 4; ++part) {
    chart::Series s = series(names[part], chart::color(part), x, low);
    s.band = true;
    s.step = true;
    s.opacity = 0.6;
    for (std::size_t e = 0; e < res.epochs.size(); ++e) {
      const EpochRun& run = res.epochs[e];
      const double parts[] = {run.ideal_compute_s, run.compute_s - run.ideal_compute_s,
                              run.exchange_s, run.overhead_s};
      low[e] += parts[part];
      s.high.push_back(low[e]);
    }
    c.series.push_back(std::move(s));
  }
  return chart::render(c);
}

std::string where_table(const Replay& r) {
  std::string t =
      "<table><tr><th>policy</th><th>balanced s</th><th>imbalance s</th><th>exchange s</th>"
      "<th>overhead s</th><th>total s</th></tr>\n";
  for (const SimResult& res : r.results) {
    t += "<tr><td>" + chart::escape(to_string(res.config.policy)) + "</td><td>" +
         fixed(res.ideal_compute_s) + "</td><td>" + fixed(res.compute_s - res.ideal_compute_s) +
         "</td><td>" + fixed(res.exchange_s) + "</td><td>" + fixed(res.overhead_s) + "</td><td>" +
         fixed(res.total_s) + "</td></tr>\n";
  }
  return t + "</table>\n";
}

}  // namespace

std::string html_report(const Replay& r) {
  const Header& h = r.header;
  std::string o = "<h1>dbs replay</h1>\n<p>Trace <code>" + chart::escape(r.path) +
                  "</code>: " + std::to_string(h.world) + " ranks, global batch " +
                  std::to_string(h.settings.global_batch) + ", " +
                  std::to_string(h.settings.samples_per_epoch) + " samples per epoch (" +
                  std::to_string(r.cluster.steps()) + " steps), " +
                  std::to_string(r.cluster.epochs()) + " epochs, recorded with policy <code>" +
                  chart::escape(to_string(h.settings.policy)) + "</code>.</p>\n";
  o += "<p class=\"note\">Model: " + chart::escape(describe_model(r)) + ". " +
       chart::escape(describe_ranks(r)) +
       ". Ideal: every step split in proportion to the throughputs, plus allreduce and "
       "overhead. Throughputs are the ground truth read from the trace; time runs in epochs of "
       "training progress.</p>\n";
  o += "<h2>Summary</h2>\n" + summary_table(r);
  o += time_chart(r);
  o += "<h2>Where the time goes</h2>\n<p class=\"note\">Balanced: every step split in "
       "proportion to the ranks' speeds; imbalance: the slowest rank's excess over it; exchange: "
       "the allreduce; overhead: the rest of a step.</p>\n" +
       where_table(r);
  for (const SimResult& res : r.results) o += where_chart(res);
  o += "<h2>Throughput per rank</h2>\n";
  chart::Chart tp{"Throughput per rank (ground truth)", "epoch", "samples/s",
                  per_rank(throughput_pieces(r.cluster)), true};
  o += chart::render(tp);
  o += "<h2>Batch size per rank</h2>\n";
  for (const SimResult& res : r.results) {
    chart::Chart b{"Batch size per rank: " + to_string(res.config.policy), "epoch",
                   "samples per step", per_rank(batch_pieces(res, r.cluster)), true};
    o += chart::render(b);
  }
  o += "<h2>Per epoch</h2>\n<details><summary>simulated, ideal and recorded seconds per "
       "epoch</summary>\n" +
       epoch_table(r) + "</details>\n";
  return chart::html_page({"dbs replay: " + r.path,
                           "body{max-width:800px;margin:2em auto;color:#222}table{margin:.5em 0}"
                           "td:first-child,th:first-child{text-align:left}"
                           "p.note{color:#555;font-size:90%}",
                           ""},
                          o);
}

}  // namespace dbs::replay
