// dbs-lab sweep: its JSON, its page and its command line (the runs are in sweep_bench.cpp).
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include "lab/lab.h"
#include "lab/sweep.h"
#include "lib/chart/chart.h"
#include "lib/chart/page.h"
#include "lib/common/cli.h"
#include "lib/common/format.h"

namespace dbs::lab {
namespace {

using nlohmann::json;

json cell_json(const Cell& c, bool measured) {
  json j = {{"kind", measured ? "measured" : "predicted"},
            {"ranks", c.ranks},
            {"threads", c.threads},
            {"global_batch", c.global_batch},
            {"batch_per_rank", (c.global_batch + c.ranks - 1) / c.ranks}};
  if (measured) {
    j["epoch_s"] = c.epoch_s;
    j["epoch_s_median"] = c.epoch_s_median;
    j["images_per_s"] = c.images_per_s;
    j["test_acc"] = c.test_acc;
  }
  if (c.predicted_s > 0) j["predicted_epoch_s"] = c.predicted_s;
  if (measured && c.predicted_s > 0)
    j["predicted_over_measured"] = c.predicted_s / c.epoch_s_median;
  return j;
}

std::string td(const std::string& s) {
  return "<td>" + chart::escape(s) + "</td>";
}

// Seconds per epoch against workers, one line per global batch (per-rank batch with
// --per-rank): the predicted curve, the measured 1-thread cells as markers on their own line.
std::string time_chart(const SweepOptions& o, const std::vector<Cell>& measured,
                       const std::vector<Cell>& predicted) {
  chart::Chart ch;
  ch.title = "seconds per epoch against workers (predicted: lines; measured: markers)";
  ch.x_label = "workers (ranks of 1 thread)";
  ch.y_label = "s per epoch";
  std::size_t k = 0;
  for (int b : o.batches) {
    chart::Series line, dots;
    const std::string name =
        o.per_rank ? "batch " + std::to_string(b) + "/rank" : "batch " + std::to_string(b);
    line.label = name + " predicted";
    dots.label = name + " measured";
    line.color = dots.color = chart::color(k++);
    dots.markers = true;
    for (const Cell& c : predicted)
      if (c.global_batch == (o.per_rank ? b * c.ranks : b)) {
        line.x.push_back(c.ranks);
        line.y.push_back(c.predicted_s);
      }
    for (const Cell& c : measured)
      if (c.threads == 1 && c.global_batch == (o.per_rank ? b * c.ranks : b)) {
        dots.x.push_back(c.ranks);
        dots.y.push_back(c.epoch_s_median);
      }
    if (!line.x.empty()) ch.series.push_back(line);
    if (!dots.x.empty()) ch.series.push_back(dots);
  }
  return chart::render(ch);
}

std::string accuracy_chart(const SweepOptions& o, const std::vector<Cell>& measured) {
  chart::Chart ch;
  ch.title = "test accuracy after " + std::to_string(o.epochs) + " epochs against global batch";
  ch.x_label = "global batch";
  ch.y_label = "test accuracy (%)";
  ch.x_whole = true;
  std::set<std::pair<int, int>> groups;
  for (const Cell& c : measured) groups.insert({c.ranks, c.threads});
  std::size_t k = 0;
  for (const auto& [r, t] : groups) {
    chart::Series s;
    s.label = std::to_string(r) + " rank(s) x " + std::to_string(t) + " thread(s)";
    s.color = chart::color(k++);
    s.markers = true;
    for (const Cell& c : measured)
      if (c.ranks == r && c.threads == t) {
        s.x.push_back(c.global_batch);
        s.y.push_back(100 * c.test_acc);
      }
    ch.series.push_back(s);
  }
  return chart::render(ch);
}

}  // namespace

json sweep_json(const SweepOptions& o, const std::vector<Cell>& measured, const Fit& fit,
                const std::vector<Cell>& predicted) {
  json m = json::array(), p = json::array();
  for (const Cell& c : measured) m.push_back(cell_json(c, true));
  for (const Cell& c : predicted) p.push_back(cell_json(c, false));
  return {{"bench", "sweep"},
          {"model", o.model},
          {"epochs", o.epochs},
          {"train_samples", o.train_limit},
          {"test_samples", o.test_limit},
          {"per_rank_batch", o.per_rank},
          {"fit",
           {{"alpha_s_per_step", fit.alpha_s},
            {"beta_s_per_sample", fit.beta_s},
            {"allreduce_2_ranks_s", fit.allreduce2_s},
            {"latency_s", fit.latency_s},
            {"bandwidth_bytes_per_s", fit.bandwidth},
            {"params", fit.params}}},
          {"measured", m},
          {"predicted", p}};
}

std::string sweep_html(const SweepOptions& o, const std::vector<Cell>& measured, const Fit& fit,
                       const std::vector<Cell>& predicted) {
  std::string h = "<h1>dbs-lab sweep: " + chart::escape(o.model) + ", " +
                  std::to_string(o.train_limit) + " samples per epoch</h1>\n";
  h += "<h2>Measured</h2>\n<table><tr><th>ranks</th><th>threads</th><th>global batch</th>"
       "<th>s per epoch (median)</th><th>images/s</th><th>test accuracy</th>"
       "<th>predicted s</th></tr>\n";
  for (const Cell& c : measured) {
    h += "<tr>" + td(std::to_string(c.ranks)) + td(std::to_string(c.threads)) +
         td(std::to_string(c.global_batch)) + td(format("%.2f", c.epoch_s_median)) +
         td(format("%.0f", c.images_per_s)) + td(format("%.2f%%", 100 * c.test_acc)) +
         td(c.predicted_s > 0 ? format("%.2f", c.predicted_s) : "") + "</tr>\n";
  }
  h += "</table>\n<h2>Predicted</h2>\n<p>" +
       chart::escape(
           format("Replay simulator (the code of dbs-scheduler replay --synthesize), "
                  "ranks of 1 thread; per step %.4f s + %.3g s per sample; ring "
                  "allreduce of %lld parameters, latency %.0f us, bandwidth %s.",
                  fit.alpha_s, fit.beta_s, static_cast<long long>(fit.params), 1e6 * fit.latency_s,
                  fit.bandwidth > 0 ? format("%.3g GB/s", fit.bandwidth / 1e9).c_str()
                                    : "infinite (no 2-rank cell slower than the model)")) +
       " A prediction, not a measurement.</p>\n<table><tr><th>workers</th>";
  std::map<int, std::map<int, double>> rows;  // workers -> batch column -> seconds
  for (const Cell& c : predicted)
    rows[c.ranks][o.per_rank ? c.global_batch / c.ranks : c.global_batch] = c.predicted_s;
  for (int b : o.batches)
    h += "<th>" + std::string(o.per_rank ? "batch/rank " : "batch ") + std::to_string(b) + "</th>";
  h += "</tr>\n";
  for (const auto& [w, cols] : rows) {
    h += "<tr>" + td(std::to_string(w));
    for (int b : o.batches) {
      const auto it = cols.find(b);
      h += td(it == cols.end() ? "" : format("%.2f", it->second));
    }
    h += "</tr>\n";
  }
  h +=
      "</table>\n" + time_chart(o, measured, predicted) + "\n" + accuracy_chart(o, measured) + "\n";
  return chart::html_page({"dbs-lab sweep", "body{margin:2em}", ""}, h);
}

void add_sweep_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<SweepOptions>();
  auto* cmd = app.add_subcommand(
      "sweep",
      "training over ranks x threads x batch sizes (one mpirun per cell), then the cells this\n"
      "machine cannot hold predicted by the replay simulator fitted on the measured ones.\n"
      "Example: dbs-lab sweep --ranks 1,2 --threads 1,2 --batch 128,256,512,1024 "
      "--out sweep.jsonl --html sweep.html");
  const auto positive = dbs::cli::above(0);
  cmd->add_option("--ranks", o->ranks, "ranks (mpirun -np)")
      ->delimiter(',')
      ->check(positive)
      ->capture_default_str();
  cmd->add_option("--threads", o->threads, "threads per rank")
      ->delimiter(',')
      ->check(positive)
      ->capture_default_str();
  cmd->add_option("--batch", o->batches, "global batch sizes (per rank with --per-rank)")
      ->delimiter(',')
      ->check(positive)
      ->capture_default_str();
  cmd->add_flag("--per-rank", o->per_rank, "--batch is per rank: global batch = batch x ranks");
  cmd->add_option("--model", o->model, "cnn or lenet")->capture_default_str();
  cmd->add_option("--epochs", o->epochs, "epochs per cell (the median is reported)")
      ->check(positive)
      ->capture_default_str();
  cmd->add_option("--train-limit", o->train_limit, "training samples")
      ->check(positive)
      ->capture_default_str();
  cmd->add_option("--test-limit", o->test_limit, "test samples")
      ->check(positive)
      ->capture_default_str();
  cmd->add_option("--lr", o->lr, "learning rate (default: the agent's)")
      ->check(dbs::cli::at_least(0));
  cmd->add_flag("--lr-per-rank", o->lr_per_rank, "learning rate x ranks");
  cmd->add_option("--agent", o->agent, "dbs-agent (default: the one of this build)");
  cmd->add_option("--mpirun", o->mpirun, "the launcher, split on spaces")->capture_default_str();
  cmd->add_option("--agent-args", o->agent_args, "more dbs-agent options, split on spaces");
  cmd->add_option("--predict-workers", o->predict_workers, "workers to predict")
      ->delimiter(',')
      ->check(positive)
      ->capture_default_str();
  cmd->add_option("--latency", o->latency_s,
                  "allreduce latency per message, seconds (fixed in the fit)")
      ->check(dbs::cli::at_least(0))
      ->capture_default_str();
  cmd->add_option("--work-dir", o->work_dir,
                  "the cells' summaries and logs (default TMPDIR/dbs-sweep)");
  cmd->add_option("--out", o->out, "write one JSON record per cell here (JSONL)");
  cmd->add_option("--html", o->html, "write the page here");
  cmd->callback([&action, o] {
    if (o->agent.empty()) {
      const auto self = std::filesystem::read_symlink("/proc/self/exe");
      o->agent = (self.parent_path().parent_path() / "agents" / "dbs-agent").string();
    }
    if (::access(o->agent.c_str(), X_OK) != 0)
      throw CLI::ValidationError("--agent", o->agent + " is not an executable dbs-agent");
    action = [o] { return run_sweep(*o); };
  });
}

}  // namespace dbs::lab
