// dbs-bench filter: the noise filter's speed. t-SNE (PCA first, as dbs-agent filter runs it) of
// --points synthetic points of --dims dimensions, and DBSCAN with the knee eps of --dbscan-points
// 2-D points. Goals: t-SNE of 60,000 x 100 under 120 s, DBSCAN of 60,000 under 1 s,
// on a 2-core machine. The 1-minute load average before and after is printed beside the times:
// figures taken on a busy machine are upper bounds.
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "bench/bench.h"
#include "lib/common/cli.h"
#include "lib/filter/dbscan.h"
#include "lib/filter/pca.h"
#include "lib/filter/tsne.h"
#include "lib/nn/threads.h"

namespace dbs::bench {
namespace {

struct FilterBenchOptions {
  std::size_t points = 60000;         // t-SNE input points
  std::size_t dims = 100;             // their dimensions (the CNN's penultimate layer has 100)
  std::size_t pca_dims = 50;          // PCA before t-SNE (0 = none)
  std::size_t dbscan_points = 60000;  // DBSCAN input points
  int min_samples = 10;               // DBSCAN core threshold
  int threads = 0;                    // TBB threads (0 = all)
  filter::TsneOptions tsne;
  std::uint64_t seed = 1;
};

double load_average() {
  std::ifstream f("/proc/loadavg");
  double v = -1;
  f >> v;
  return v;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// CPU seconds of all this process's threads: on a shared machine, wall time / threads on an
// idle machine is about this over the thread count.
double cpu_seconds() {
  return static_cast<double>(std::clock()) / CLOCKS_PER_SEC;
}

// 10 Gaussian clusters (sd 1) with centres N(0, 3²) per coordinate, like a trained network's
// class features; a twentieth of the points uniformly scattered as label noise would be.
std::vector<float> clustered(std::size_t n, std::size_t d, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> centres(10 * d);
  for (auto& c : centres) c = 3.0f * g(rng);
  std::vector<float> x(n * d);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t c = i % 10, other = (i / 10) % 10;
    const bool stray = i % 20 == 0;
    for (std::size_t t = 0; t < d; ++t)
      x[i * d + t] =
          (stray ? 0.5f * (centres[c * d + t] + centres[other * d + t]) : centres[c * d + t]) +
          g(rng);
  }
  return x;
}

nlohmann::json run(const FilterBenchOptions& o) {
  nn::ThreadLimit limit(o.threads);
  nlohmann::json out = {
      {"bench", "filter"}, {"threads", limit.threads()}, {"load_avg_1min_before", load_average()}};
  const std::vector<float> x = clustered(o.points, o.dims, o.seed);
  double cpu0 = cpu_seconds();
  auto t0 = std::chrono::steady_clock::now();
  std::vector<float> reduced;
  std::size_t dims = o.dims;
  if (o.pca_dims > 0 && o.pca_dims < o.dims) {
    reduced = filter::pca(x.data(), o.points, o.dims, o.pca_dims);
    dims = o.pca_dims;
  }
  const double pca_s = seconds_since(t0);
  const filter::TsneResult t =
      filter::tsne(reduced.empty() ? x.data() : reduced.data(), o.points, dims, o.tsne);
  const double total = pca_s + t.neighbours_s + t.affinity_s + t.optimise_s;
  out["tsne"] = {{"points", o.points},
                 {"dims", o.dims},
                 {"pca_dims", dims},
                 {"perplexity", o.tsne.perplexity},
                 {"theta", o.tsne.theta},
                 {"iterations", o.tsne.iterations},
                 {"pca_s", pca_s},
                 {"neighbours_s", t.neighbours_s},
                 {"affinity_s", t.affinity_s},
                 {"optimise_s", t.optimise_s},
                 {"total_s", total},
                 {"cpu_s", cpu_seconds() - cpu0},
                 {"kl", t.kl},
                 {"goal_s", 120},
                 {"meets_goal", total < 120}};

  // DBSCAN on 2-D points: 10 Gaussian blobs plus 5% uniform noise.
  std::mt19937_64 rng(o.seed + 1);
  std::normal_distribution<double> g(0.0, 1.0);
  std::uniform_real_distribution<double> u(-40.0, 40.0);
  std::vector<double> xy(2 * o.dbscan_points);
  for (std::size_t i = 0; i < o.dbscan_points; ++i) {
    const bool noise = i % 20 == 0;
    const double cx = 20.0 * std::cos(0.628 * double(i % 10)),
                 cy = 20.0 * std::sin(0.628 * double(i % 10));
    xy[2 * i] = noise ? u(rng) : cx + 2.0 * g(rng);
    xy[2 * i + 1] = noise ? u(rng) : cy + 2.0 * g(rng);
  }
  cpu0 = cpu_seconds();
  t0 = std::chrono::steady_clock::now();
  const double eps = filter::default_eps(xy.data(), o.dbscan_points, o.min_samples);
  const double eps_s = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  const filter::DbscanResult db = filter::dbscan(xy.data(), o.dbscan_points, eps, o.min_samples);
  const double db_s = seconds_since(t0);
  std::size_t noise = 0;
  for (const auto l : db.label) noise += l == filter::kNoise;
  out["dbscan"] = {{"points", o.dbscan_points},
                   {"min_samples", o.min_samples},
                   {"eps", eps},
                   {"knee_eps_s", eps_s},
                   {"dbscan_s", db_s},
                   {"total_s", eps_s + db_s},
                   {"cpu_s", cpu_seconds() - cpu0},
                   {"clusters", db.clusters},
                   {"noise", noise},
                   {"goal_s", 1},
                   {"meets_goal", eps_s + db_s < 1}};
  out["load_avg_1min_after"] = load_average();
  return out;
}

}  // namespace

void add_filter_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<FilterBenchOptions>();
  auto* cmd = cli::add_command(app, action, "filter",
                               "t-SNE and DBSCAN speed of the noise filter (synthetic data)", o,
                               [](FilterBenchOptions& options) {
                                 options.tsne.seed = options.seed;
                                 std::puts(run(options).dump(2).c_str());
                                 return 0;
                               });
  cmd->add_option("--points", o->points, "t-SNE points")
      ->capture_default_str()
      ->check(CLI::Range(4, 10000000));
  cmd->add_option("--dims", o->dims, "t-SNE input dimensions")
      ->capture_default_str()
      ->check(dbs::cli::above(0));
  cmd->add_option("--pca-dims", o->pca_dims, "PCA dimensions before t-SNE (0 = none)")
      ->capture_default_str();
  cmd->add_option("--iterations", o->tsne.iterations, "t-SNE gradient steps")
      ->capture_default_str()
      ->check(dbs::cli::at_least(0));
  cmd->add_option("--perplexity", o->tsne.perplexity, "t-SNE perplexity")
      ->capture_default_str()
      ->check(dbs::cli::above(0));
  cmd->add_option("--theta", o->tsne.theta, "Barnes-Hut accuracy (0 = exact)")
      ->capture_default_str()
      ->check(dbs::cli::at_least(0));
  cmd->add_option("--dbscan-points", o->dbscan_points, "DBSCAN points")
      ->capture_default_str()
      ->check(CLI::Range(2, 100000000));
  cmd->add_option("--min-samples", o->min_samples, "DBSCAN core threshold")
      ->capture_default_str()
      ->check(dbs::cli::above(0));
  cmd->add_option("--threads", o->threads, "TBB threads (0 = all)")
      ->capture_default_str()
      ->check(dbs::cli::at_least(0));
  cmd->add_option("--seed", o->seed, "data and t-SNE seed")->capture_default_str();
}

}  // namespace dbs::bench
