// dbs-bench: benchmarks that print JSON. Speed goals live here, never in tests.
#include <cstdio>
#include <exception>

#include "bench/bench.h"

int main(int argc, char** argv) {
  using namespace dbs::bench;
  CLI::App app{"dbs-bench: benchmarks for dbs, each printing one JSON document.\n"
               "Example: dbs-bench train --model cnn --threads 1 --batch 128 --steps 20"};
  app.require_subcommand(1);
  Action action;
  add_peak_command(app, action);
  add_train_commands(app, action);
  add_scheduler_command(app, action);
  add_allreduce_command(app, action);
  add_balance_command(app, action);
  CLI11_PARSE(app, argc, argv);
  try {
    return action ? action() : 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dbs-bench: error: %s\n", e.what());
    return 1;
  }
}
