// dbs-bench train and dbs-bench kernels: training-step throughput and per-layer times on
// synthetic data of Fashion-MNIST's shape (the cost does not depend on the pixel values).
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <vector>

#include "bench/bench.h"
#include "lib/common/cli.h"
#include "lib/common/stats.h"
#include "lib/common/timer.h"
#include "lib/nn/model.h"
#include "lib/nn/threads.h"
#include "lib/optim/optimizer.h"

namespace dbs::bench {
namespace {

struct TrainOptions {
  std::string model = "cnn";  // model name
  int threads = 1;            // TBB threads
  int batch = 128;            // samples per step
  int steps = 20;             // timed steps (kernels: repeats per layer)
  int warmup = 3;             // untimed steps before
  unsigned seed = 1;          // model and data seed
};

struct Batch {
  std::vector<float> x;
  std::vector<std::int32_t> y;
  std::vector<std::int64_t> ids;
};

Batch synthetic_batch(const nn::Model& m, int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> px(0.0f, 1.0f);
  Batch b;
  b.x.resize(static_cast<std::size_t>(n) * m.input_shape().size());
  for (float& v : b.x) v = px(rng);
  b.y.resize(static_cast<std::size_t>(n));
  for (auto& l : b.y) l = static_cast<std::int32_t>(rng() % static_cast<unsigned>(m.classes()));
  b.ids.resize(static_cast<std::size_t>(n));
  std::iota(b.ids.begin(), b.ids.end(), 0);
  return b;
}

int run_train(const TrainOptions& o) {
  nn::ThreadLimit limit(o.threads);
  auto model = nn::make_model(o.model, {1, 28, 28}, 10, o.seed);
  auto opt = optim::make_optimizer("adam", model->param_count());
  const Batch b = synthetic_batch(*model, o.batch, o.seed);
  nn::Context ctx;
  ctx.training = true;
  ctx.sample_ids = b.ids.data();
  std::vector<double> step_s;
  double cpu_s = 0;  // the process's CPU time over the timed steps, every thread
  for (int s = 0; s < o.warmup + o.steps; ++s) {
    const double cpu0 = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
    Stopwatch sw;
    model->loss_and_grads(b.x.data(), b.y.data(), o.batch, ctx);
    opt->step(model->params(), model->grads(), 1e-4, 1.0 / o.batch);
    if (s < o.warmup) continue;
    step_s.push_back(sw.seconds());
    cpu_s += cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
  }
  const double total = std::accumulate(step_s.begin(), step_s.end(), 0.0);
  const double images = o.batch * static_cast<double>(o.steps);
  const double ips = images / total;
  const double gflops = ips * model->train_flops_per_sample() / 1e9;
  const double cpu_gflops = images / cpu_s * model->train_flops_per_sample() / 1e9;
  const Peak peak = measure_peak(0.5);
  nlohmann::json j = {
      {"bench", "train"},
      {"model", o.model},
      {"threads", limit.threads()},
      {"batch", o.batch},
      {"steps", o.steps},
      {"warmup_steps", o.warmup},
      {"data", "synthetic 1x28x28"},
      {"images_per_s", ips},
      {"step_ms_median", stats::median(step_s) * 1e3},
      {"train_mflop_per_sample", model->train_flops_per_sample() / 1e6},
      {"gflops", gflops},
      {"peak_gflops_per_core", peak.gflops},
      {"peak_fraction", gflops / (peak.gflops * limit.threads())},
      // The same fraction per CPU second on both sides, which a busy machine moves less.
      {"cpu_s", cpu_s},
      {"peak_gflops_per_cpu_s", peak.cpu_gflops},
      {"peak_fraction_cpu", cpu_gflops / peak.cpu_gflops},
  };
  std::puts(j.dump(2).c_str());
  return 0;
}

int run_kernels(const TrainOptions& o) {
  nn::ThreadLimit limit(o.threads);
  auto model = nn::make_model(o.model, {1, 28, 28}, 10, o.seed);
  const Batch b = synthetic_batch(*model, o.batch, o.seed);
  nn::Context ctx;
  ctx.training = true;
  ctx.sample_ids = b.ids.data();
  model->loss_and_grads(b.x.data(), b.y.data(), o.batch, ctx);  // fills every activation
  nlohmann::json layers = nlohmann::json::array();
  double total_f = 0.0, total_b = 0.0;
  for (std::size_t i = 0; i < model->layer_count(); ++i) {
    nn::Layer& l = model->layer(i);
    nn::Tensor& x = model->activation(i);
    nn::Tensor y, dy, dx;
    l.forward(x, y, ctx);
    dy = y;
    std::vector<double> fwd, bwd;
    for (int r = 0; r < std::max(1, o.steps); ++r) {
      Stopwatch sw;
      l.forward(x, y, ctx);
      fwd.push_back(sw.seconds());
      sw.reset();
      l.backward(x, y, dy, i == 0 ? nullptr : &dx, ctx);
      bwd.push_back(sw.seconds());
    }
    const double f = stats::median(fwd), bk = stats::median(bwd);
    total_f += f;
    total_b += bk;
    const double flops = l.forward_flops(x.shape) * o.batch;
    layers.push_back({{"layer", l.name()},
                      {"in", x.shape.str()},
                      {"forward_ms", f * 1e3},
                      {"backward_ms", bk * 1e3},
                      {"forward_gflops", flops / f / 1e9}});
  }
  nlohmann::json j = {{"bench", "kernels"},
                      {"model", o.model},
                      {"threads", limit.threads()},
                      {"batch", o.batch},
                      {"repeats", std::max(1, o.steps)},
                      {"layers", layers},
                      {"forward_ms_total", total_f * 1e3},
                      {"backward_ms_total", total_b * 1e3}};
  std::puts(j.dump(2).c_str());
  return 0;
}

}  // namespace

void add_train_commands(CLI::App& app, Action& action) {
  auto o = std::make_shared<TrainOptions>();
  auto add_options = [o](CLI::App* c) {
    c->add_option("--model", o->model, "model: cnn or lenet")->capture_default_str();
    c->add_option("--threads", o->threads, "TBB threads")
        ->capture_default_str()
        ->check(dbs::cli::above(0));
    c->add_option("--batch", o->batch, "samples per step")
        ->capture_default_str()
        ->check(dbs::cli::above(0));
    c->add_option("--steps", o->steps, "timed steps (kernels: repeats per layer)")
        ->capture_default_str()
        ->check(dbs::cli::above(0));
    c->add_option("--warmup", o->warmup, "untimed steps first")
        ->capture_default_str()
        ->check(dbs::cli::at_least(0));
    c->add_option("--seed", o->seed, "model and data seed")->capture_default_str();
  };
  add_options(cli::add_command(app, action, "train",
                               "time training steps: images/s, GFLOP/s, fraction of peak", o,
                               run_train));
  add_options(cli::add_command(app, action, "kernels", "forward and backward time per layer", o,
                               run_kernels));
}

}  // namespace dbs::bench
