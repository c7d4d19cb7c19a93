// dbs-bench: benchmarks that print JSON. Speed goals live here, never in tests.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <exception>

#include "bench/bench.h"

int main(int argc, char** argv) {
  using namespace dbs::bench;
  CLI::App app{"dbs-bench: benchmarks for dbs, each printing one JSON document.\n"
               "Example: dbs-bench train --model cnn --threads 1 --batch 128 --steps 20"};
  app.require_subcommand(1);

  double peak_seconds = 2.0;
  auto* peak = app.add_subcommand("peak", "measure this core's fp32 FMA peak (GFLOP/s)");
  peak->add_option("--seconds", peak_seconds, "measuring time")->capture_default_str()->check(CLI::PositiveNumber);

  TrainOptions t;
  auto add_train_options = [&t](CLI::App* c) {
    c->add_option("--model", t.model, "model: cnn or lenet")->capture_default_str();
    c->add_option("--threads", t.threads, "TBB threads")->capture_default_str()->check(CLI::PositiveNumber);
    c->add_option("--batch", t.batch, "samples per step")->capture_default_str()->check(CLI::PositiveNumber);
    c->add_option("--steps", t.steps, "timed steps (kernels: repeats per layer)")->capture_default_str()->check(CLI::PositiveNumber);
    c->add_option("--warmup", t.warmup, "untimed steps first")->capture_default_str()->check(CLI::NonNegativeNumber);
    c->add_option("--seed", t.seed, "model and data seed")->capture_default_str();
  };
  auto* train = app.add_subcommand("train", "time training steps: images/s, GFLOP/s, fraction of peak");
  add_train_options(train);
  auto* kernels = app.add_subcommand("kernels", "forward and backward time per layer");
  add_train_options(kernels);

  CLI11_PARSE(app, argc, argv);
  try {
    if (*peak) {
      const double g = measure_peak_gflops(peak_seconds);
      std::puts(nlohmann::json({{"bench", "peak"}, {"gflops_per_core", g}}).dump(2).c_str());
    } else if (*train) {
      run_train(t);
    } else if (*kernels) {
      run_kernels(t);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dbs-bench: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
