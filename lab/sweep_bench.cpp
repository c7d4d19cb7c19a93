// dbs-lab sweep: training over a grid of ranks x threads x batch sizes, each cell one real
// `mpirun ... dbs-agent` run, then the cells this machine cannot hold predicted by the replay
// simulator (lib/replay, the code behind `dbs-scheduler replay --synthesize`) with a cost model
// fitted on the measured cells:
//   per-step time of one rank at batch b:  t(b) = alpha + beta * b     (1-rank, 1-thread cells,
//   fitted by policy::fit_samples, the policy's own least squares)
//   allreduce of W ranks: the ring model, 2 (W-1) latency + 2 (W-1)/W bytes / bandwidth, with
//   the latency fixed (--latency) and the bandwidth fitted on the 2-rank cells.
// Prints one JSON document; --out writes one JSON record per cell (JSONL), --html a page with
// the tables and their charts (lib/chart).
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "lab/sweep.h"
#include "lib/common/atomic_file.h"
#include "lib/common/error.h"
#include "lib/common/stats.h"
#include "lib/policy/cost.h"
#include "lib/replay/simulate.h"
#include "lib/replay/synth.h"

extern char** environ;

namespace dbs::lab {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// Runs argv with stdout and stderr to `log`; returns the exit status.
int run_logged(const std::vector<std::string>& argv, const std::string& log) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw Error("cannot start " + argv[0] + ": " + std::strerror(rc));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::vector<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

Cell measure(const SweepOptions& o, int ranks, int threads, int batch, const fs::path& work) {
  Cell c;
  c.ranks = ranks;
  c.threads = threads;
  c.global_batch = o.per_rank ? batch * ranks : batch;
  const std::string name = "r" + std::to_string(ranks) + "-t" + std::to_string(threads) + "-b" +
                           std::to_string(c.global_batch);
  const fs::path summary = work / (name + ".json"), log = work / (name + ".log");
  std::vector<std::string> argv = words(o.mpirun);
  argv.insert(argv.end(), {"-np",
                           std::to_string(ranks),
                           o.agent,
                           "--model",
                           o.model,
                           "--threads",
                           std::to_string(threads),
                           "--batch",
                           std::to_string(c.global_batch),
                           "--epochs",
                           std::to_string(o.epochs),
                           "--train-limit",
                           std::to_string(o.train_limit),
                           "--test-limit",
                           std::to_string(o.test_limit),
                           "--policy",
                           "static",
                           "--no-progress",
                           "--summary",
                           summary.string()});
  if (o.lr > 0) {
    std::ostringstream lr;
    lr << o.lr * (o.lr_per_rank ? ranks : 1);
    argv.insert(argv.end(), {"--lr", lr.str()});
  }
  for (const auto& a : words(o.agent_args)) argv.push_back(a);
  std::fprintf(stderr, "dbs-lab sweep: %d rank(s) x %d thread(s), global batch %d\n", ranks,
               threads, c.global_batch);
  if (const int rc = run_logged(argv, log.string()); rc != 0)
    throw Error("the cell " + name + " failed (exit " + std::to_string(rc) + "); see " +
                log.string());
  std::ifstream in(summary);
  const json s = json::parse(in);
  std::vector<double> walls;
  for (const auto& e : s.at("epochs")) walls.push_back(e.at("wall_s").get<double>());
  c.epoch_s = walls;
  c.epoch_s_median = stats::median(walls);
  c.images_per_s = static_cast<double>(o.train_limit) / c.epoch_s_median;
  c.test_acc = s.at("test_acc").get<double>();
  c.params = s.at("config").at("params").get<std::int64_t>();
  return c;
}

std::int64_t steps_of(std::int64_t n, int batch) {
  return (n + batch - 1) / batch;
}

}  // namespace

Fit fit_cells(const std::vector<Cell>& cells, std::int64_t n, double latency_s) {
  Fit f;
  f.latency_s = latency_s;
  std::vector<policy::Sample> steps;  // 1 rank, 1 thread: per-step seconds at batch b, weight 1
  for (const Cell& c : cells) {
    if (c.ranks != 1 || c.threads != 1) continue;
    steps.push_back({static_cast<double>(c.global_batch), 1.0,
                     c.epoch_s_median / static_cast<double>(steps_of(n, c.global_batch))});
    f.params = c.params;
  }
  if (steps.empty()) throw ConfigError("the fit needs at least one cell of 1 rank x 1 thread");
  // The policy's fit, degenerate cases included (one batch size, beta <= 0, alpha < 0).
  const std::optional<policy::Cost> cost = policy::fit_samples(steps);
  if (!cost) throw ConfigError("the fit needs a 1 rank x 1 thread cell with a positive epoch time");
  f.alpha_s = cost->alpha;
  f.beta_s = cost->beta;
  std::vector<double> extra;  // 2 ranks, 1 thread: the per-step seconds the model lacks
  for (const Cell& c : cells) {
    if (c.ranks != 2 || c.threads != 1) continue;
    const double step = c.epoch_s_median / static_cast<double>(steps_of(n, c.global_batch));
    extra.push_back(step - (f.alpha_s + f.beta_s * std::ceil(c.global_batch / 2.0)));
  }
  f.allreduce2_s = std::max(0.0, stats::median(extra));
  const double bytes = replay::allreduce_bytes(f.params, 2);
  const double wire = f.allreduce2_s - 2 * latency_s;             // 2 (W - 1) latencies at W = 2
  f.bandwidth = extra.empty() || wire <= 0 ? 0.0 : bytes / wire;  // 0 = infinite
  return f;
}

double predict_epoch_s(const Fit& f, int workers, int global_batch, std::int64_t n) {
  const json spec = {
      {"epochs", 1},
      {"samples_per_epoch", n},
      {"global_batch", global_batch},
      {"policy", "static"},
      {"params", f.params},
      {"latency_s", f.latency_s},
      {"bandwidth", f.bandwidth},
      {"overhead_s", f.alpha_s},
      {"nodes",
       json::array({{{"name", "w"}, {"count", workers}, {"throughput", 1.0 / f.beta_s}}})}};
  const replay::Spec s = replay::parse_spec(spec, "sweep prediction");
  return replay::simulate(replay::cluster_of(s), replay::cost_of(s), s.settings)
      .epochs.front()
      .time_s;
}

int run_sweep(const SweepOptions& o) {
  const fs::path work =
      o.work_dir.empty() ? fs::temp_directory_path() / "dbs-sweep" : fs::path(o.work_dir);
  fs::create_directories(work);
  std::vector<Cell> cells;
  for (int r : o.ranks)
    for (int t : o.threads)
      for (int b : o.batches) cells.push_back(measure(o, r, t, b, work));
  const Fit fit = fit_cells(cells, static_cast<std::int64_t>(o.train_limit), o.latency_s);
  for (Cell& c : cells) {
    if (c.threads == 1)
      c.predicted_s =
          predict_epoch_s(fit, c.ranks, c.global_batch, static_cast<std::int64_t>(o.train_limit));
  }
  std::vector<Cell> predicted;
  for (int w : o.predict_workers)
    for (int b : o.batches) {
      Cell p;
      p.ranks = w;
      p.global_batch = o.per_rank ? b * w : b;
      if (p.global_batch < w) continue;  // fewer samples per step than workers
      p.predicted_s =
          predict_epoch_s(fit, w, p.global_batch, static_cast<std::int64_t>(o.train_limit));
      predicted.push_back(p);
    }
  const json doc = sweep_json(o, cells, fit, predicted);
  std::printf("%s\n", doc.dump(2).c_str());
  if (!o.out.empty()) {
    std::string lines;
    for (const auto& rec : doc.at("measured")) lines += rec.dump() + "\n";
    for (const auto& rec : doc.at("predicted")) lines += rec.dump() + "\n";
    write_file_atomic(o.out, lines);
  }
  if (!o.html.empty()) write_file_atomic(o.html, sweep_html(o, cells, fit, predicted));
  return 0;
}

}  // namespace dbs::lab
