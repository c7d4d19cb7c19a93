// dbs-lab sweep (sweep_bench.cpp measures and predicts, sweep_report.cpp writes the JSON, the
// page and the command line).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace dbs::lab {

struct SweepOptions {
  std::vector<int> ranks = {1, 2};
  std::vector<int> threads = {1, 2};
  std::vector<int> batches = {128, 256, 512, 1024};  // global, or per rank with per_rank
  bool per_rank = false;
  std::string model = "cnn";
  int epochs = 3;
  std::size_t train_limit = 12000;
  std::size_t test_limit = 2000;
  double lr = 0;             // 0 = the agent's default
  bool lr_per_rank = false;  // lr x ranks (the CNN case study: 0.001 x processes)
  std::string agent;         // dbs-agent; default: next to this dbs-lab in the build tree
  std::string mpirun = "mpirun --allow-run-as-root --oversubscribe --bind-to none";
  std::string agent_args;  // more dbs-agent options, split on spaces
  std::vector<int> predict_workers = {1, 2, 4, 8, 16, 32, 64, 96};
  double latency_s = 20e-6;  // ring allreduce latency per message, fixed in the fit
  std::string work_dir;      // the cells' summaries and logs; default TMPDIR/dbs-sweep
  std::string out;           // JSONL, one record per cell
  std::string html;          // the page
};

// One cell: measured (epoch_s filled) or only predicted.
struct Cell {
  int ranks = 1, threads = 1, global_batch = 0;
  std::vector<double> epoch_s;  // per epoch, measured
  double epoch_s_median = 0;
  double images_per_s = 0;
  double test_acc = -1;  // fraction; -1 = not measured
  std::int64_t params = 0;
  double predicted_s = 0;  // 0 = no prediction (cells of more than one thread)
};

// The cost model fitted on the measured cells (see sweep_bench.cpp).
struct Fit {
  double alpha_s = 0;       // per step
  double beta_s = 0;        // per sample, one thread
  double allreduce2_s = 0;  // per step, 2 ranks
  double latency_s = 0;
  double bandwidth = 0;  // bytes/s, 0 = infinite
  std::int64_t params = 0;
};

Fit fit_cells(const std::vector<Cell>& cells, std::int64_t samples, double latency_s);
double predict_epoch_s(const Fit& fit, int workers, int global_batch, std::int64_t samples);
int run_sweep(const SweepOptions& o);

nlohmann::json sweep_json(const SweepOptions& o, const std::vector<Cell>& measured, const Fit& fit,
                          const std::vector<Cell>& predicted);
std::string sweep_html(const SweepOptions& o, const std::vector<Cell>& measured, const Fit& fit,
                       const std::vector<Cell>& predicted);

}  // namespace dbs::lab
