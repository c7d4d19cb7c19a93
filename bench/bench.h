// dbs-bench subcommands. Each prints one JSON document on stdout. A subcommand registers its
// options on the app and, when chosen, sets `action` to the function that runs it.
#pragma once

#include <cstdint>
#include <string>

#include "lib/common/cli.h"

namespace dbs::bench {

using cli::Action;

void add_peak_command(CLI::App& app, Action& action);       // peak.cpp
void add_train_commands(CLI::App& app, Action& action);     // train_bench.cpp: train, kernels
void add_scheduler_command(CLI::App& app, Action& action);  // scheduler_bench.cpp
void add_allreduce_command(CLI::App& app, Action& action);  // allreduce_bench.cpp
void add_filter_command(CLI::App& app, Action& action);     // filter_bench.cpp

// Single-core fp32 FMA peak, measured for about `seconds` in the calling thread: GFLOP per
// second of wall time, and per second of that thread's CPU time (which another process taking
// the core does not lower).
struct Peak {
  double gflops = 0;      // per wall second
  double cpu_gflops = 0;  // per CPU second of the measuring thread
};
Peak measure_peak(double seconds);

// Allocations (global operator new, every form) made so far by the calling thread; counted by
// alloc_count.cpp, which replaces operator new in dbs-bench.
std::uint64_t thread_allocations();

}  // namespace dbs::bench
