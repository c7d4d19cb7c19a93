// dbs-bench subcommands. Each prints one JSON document on stdout. A subcommand registers its
// options on the app and, when chosen, sets `action` to the function that runs it.
#pragma once

#include <string>

#include "lib/common/cli.h"

namespace dbs::bench {

using cli::Action;

void add_peak_command(CLI::App& app, Action& action);        // peak.cpp
void add_train_commands(CLI::App& app, Action& action);      // train_bench.cpp: train, kernels
void add_scheduler_command(CLI::App& app, Action& action);   // scheduler_bench.cpp
void add_allreduce_command(CLI::App& app, Action& action);   // allreduce_bench.cpp
void add_filter_command(CLI::App& app, Action& action);      // filter_bench.cpp

// Single-core fp32 FMA peak in GFLOP/s, measured for about `seconds`.
double measure_peak_gflops(double seconds);

}  // namespace dbs::bench
