// dbs-bench balance (run under mpirun): the same short training under several policies with the
// same disturbance; per-epoch wall and ideal times, the steady-state ratio to the ideal, and the
// speedup over static. A run is "static", "dbs", "fixed:..." or "dbs@K" (dbs re-planning every
// K steps as well).
#include <mpi.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>
#include <sstream>

#include "bench/bench.h"
#include "lib/comm/mpi.h"
#include "lib/common/log.h"
#include "lib/data/dataset.h"
#include "lib/nn/threads.h"
#include "lib/train/trainer.h"

namespace dbs::bench {
namespace {

struct BalanceOptions {
  std::string model = "cnn";                  // model
  int threads = 1;                            // TBB threads per rank
  int batch = 128;                            // global batch
  int epochs = 5;                             // epochs per run
  std::size_t train_limit = 6000;             // training samples
  std::size_t test_limit = 1000;              // test samples
  int steady_from = 3;                        // first epoch (1-based) of the steady state
  std::vector<std::string> runs = {"static", "dbs"};
  std::vector<std::string> disturb = {"rank=1,factor=3"};
  std::string data_dir = data::kDefaultDataDir;
};

nlohmann::json one_run(const BalanceOptions& o, const std::string& run, comm::Communicator& comm,
                       const data::FashionMnist& data) {
  train::Config c;
  c.model = o.model;
  c.threads = o.threads;
  c.global_batch = o.batch;
  c.schedule.global_batch = o.batch;
  c.epochs = o.epochs;
  c.train_limit = o.train_limit;
  c.test_limit = o.test_limit;
  c.progress = false;
  c.table = false;
  const auto at = run.find('@');
  c.policy = run.substr(0, at);
  if (at != std::string::npos) c.rebalance_every = std::stoi(run.substr(at + 1));
  for (const auto& d : o.disturb) c.disturbances.push_back(train::parse_disturbance(d));
  const train::RunResult r = train::run(c, comm, data);
  nlohmann::json epochs = nlohmann::json::array();
  double wall = 0, ideal = 0, total = 0;
  for (const auto& e : r.epochs) {
    epochs.push_back({{"epoch", e.epoch + 1}, {"wall_s", e.wall_s}, {"ideal_s", e.ideal_s},
                      {"ratio_to_ideal", e.wall_s / e.ideal_s}, {"batch", e.batch},
                      {"throughput", e.throughput}, {"replans", e.replans}});
    total += e.wall_s;
    if (e.epoch + 1 >= o.steady_from) {
      wall += e.wall_s;
      ideal += e.ideal_s;
    }
  }
  return {{"run", run}, {"epochs", epochs}, {"total_s", total}, {"steady_wall_s", wall},
          {"steady_ideal_s", ideal}, {"steady_ratio_to_ideal", ideal > 0 ? wall / ideal : 0.0},
          {"test_acc", r.test_acc}};
}

int run_balance(const BalanceOptions& o) {
  int argc = 0;
  char** argv = nullptr;
  comm::MpiRuntime mpi(&argc, &argv);
  auto comm = comm::make_mpi(comm::Algorithm::mpi);
  nn::ThreadLimit limit(o.threads);
  log::set_level(log::Level::warn);
  try {
    const data::FashionMnist data = data::load_fashion_mnist(o.data_dir);
    nlohmann::json runs = nlohmann::json::array();
    for (const auto& run : o.runs) runs.push_back(one_run(o, run, *comm, data));
    double static_wall = 0;
    for (const auto& r : runs)
      if (r["run"] == "static") static_wall = r["steady_wall_s"].get<double>();
    for (auto& r : runs)
      r["speedup_vs_static"] = static_wall > 0 ? static_wall / r["steady_wall_s"].get<double>() : 0.0;
    if (comm->rank() == 0)
      std::puts(nlohmann::json({{"bench", "balance"}, {"ranks", comm->size()}, {"model", o.model},
                                {"threads", o.threads}, {"global_batch", o.batch},
                                {"train_samples", o.train_limit}, {"disturb", o.disturb},
                                {"steady_from_epoch", o.steady_from}, {"runs", runs}})
                    .dump(2)
                    .c_str());
  } catch (const std::exception& e) {
    log::error(e.what());
    comm->abort(1);
  }
  return 0;
}

}  // namespace

void add_balance_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<BalanceOptions>();
  auto* cmd = app.add_subcommand(
      "balance", "static vs dbs under a disturbance: epoch times, ratio to ideal, speedup (run under mpirun)");
  cmd->add_option("--model", o->model, "cnn or lenet")->capture_default_str();
  cmd->add_option("--threads", o->threads, "TBB threads per rank")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--batch", o->batch, "global batch")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--epochs", o->epochs, "epochs per run")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--train-limit", o->train_limit, "training samples")->capture_default_str();
  cmd->add_option("--test-limit", o->test_limit, "test samples")->capture_default_str();
  cmd->add_option("--steady-from", o->steady_from, "first epoch (1-based) of the steady state")->capture_default_str();
  cmd->add_option("--runs", o->runs, "runs: static, dbs, fixed:..., dbs@K (re-plan every K steps)")->delimiter(',')->capture_default_str();
  cmd->add_option("--disturb", o->disturb, "disturbance spec as for dbs-agent (repeatable)")->capture_default_str();
  cmd->add_option("--data", o->data_dir, "Fashion-MNIST directory")->capture_default_str();
  cmd->callback([&action, o] { action = [o] { return run_balance(*o); }; });
}

}  // namespace dbs::bench
