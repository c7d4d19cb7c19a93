// dbs-bench: benchmarks that print JSON. Speed goals live here, never in tests.
#include <exception>

#include "bench/bench.h"
#include "lib/common/cli.h"

int main(int argc, char** argv) {
  using namespace dbs::bench;
  CLI::App app{
      "dbs-bench: benchmarks for dbs, each printing one JSON document.\n"
      "Example: dbs-bench train --model cnn --threads 1 --batch 128 --steps 20"};
  dbs::cli::add_version_flag(app, "dbs-bench");
  app.require_subcommand(1);
  Action action;
  add_peak_command(app, action);
  add_train_commands(app, action);
  add_scheduler_command(app, action);
  add_allreduce_command(app, action);
  add_filter_command(app, action);
  if (auto code = dbs::cli::parse(app, argc, argv, "dbs-bench")) return *code;
  try {
    return action ? action() : dbs::cli::usage_error;
  } catch (const std::exception& e) {
    return dbs::cli::fail("dbs-bench", e.what(), dbs::cli::runtime_error);
  }
}
