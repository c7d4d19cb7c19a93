// dbs-bench subcommands. Each prints one JSON document on stdout.
#pragma once

#include <string>

namespace dbs::bench {

// Single-core fp32 FMA peak in GFLOP/s, measured for about `seconds`.
double measure_peak_gflops(double seconds);

struct TrainOptions {
  std::string model = "cnn";  // model name
  int threads = 1;            // TBB threads
  int batch = 128;            // samples per step
  int steps = 20;             // timed steps
  int warmup = 3;             // untimed steps before
  unsigned seed = 1;          // model and data seed
};
void run_train(const TrainOptions& o);
void run_kernels(const TrainOptions& o);

}  // namespace dbs::bench
