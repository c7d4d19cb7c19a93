// dbs-lab: the studies behind the project's figures (balance, sweep, study, exchange), apart
// from the installed binaries.
#include <exception>

#include "lab/lab.h"
#include "lib/common/cli.h"

int main(int argc, char** argv) {
  using namespace dbs::lab;
  CLI::App app{
      "dbs-lab: the studies behind dbs's figures (not installed), each printing JSON.\n"
      "Example: mpirun -np 2 dbs-lab balance --model lenet --epochs 3 --runs static,dbs"};
  dbs::cli::add_version_flag(app, "dbs-lab");
  app.require_subcommand(1);
  Action action;
  add_balance_command(app, action);
  add_sweep_command(app, action);
  add_study_command(app, action);
  add_exchange_command(app, action);
  if (auto code = dbs::cli::parse(app, argc, argv, "dbs-lab")) return *code;
  try {
    return action ? action() : dbs::cli::usage_error;
  } catch (const std::exception& e) {
    return dbs::cli::fail("dbs-lab", e.what(), dbs::cli::runtime_error);
  }
}
