// dbs-scheduler: `serve` (the daemon on the head node), `job-key`, `backup` and `restore` of its
// state directory, `replay` (the policy code over a recorded trace) and `bed` (a cluster spec's
// shape on the cluster test bed).
#include <cstdio>
#include <exception>

#include "lib/common/cli.h"
#include "lib/common/error.h"
#include "scheduler/command.h"

int main(int argc, char** argv) {
  CLI::App app{
      "dbs-scheduler: the dbs planning daemon, its state's backup, and the trace replayer.\n"
      "Examples: dbs-scheduler serve --listen 127.0.0.1:7070 --state-dir /var/lib/dbs-scheduler\n"
      "          dbs-scheduler replay traces/constant-static.jsonl --compare dbs,static"};
  dbs::cli::add_version_flag(app, "dbs-scheduler");
  app.require_subcommand(1);
  dbs::scheduler::Action action;
  dbs::scheduler::add_serve_command(app, action);
  dbs::scheduler::add_job_key_command(app, action);
  dbs::scheduler::add_backup_command(app, action);
  dbs::scheduler::add_restore_command(app, action);
  dbs::scheduler::add_replay_command(app, action);
  dbs::scheduler::add_bed_command(app, action);
  if (auto code = dbs::cli::parse(app, argc, argv, "dbs-scheduler")) return *code;
  try {
    return action ? action() : dbs::cli::usage_error;
  } catch (const dbs::ConfigError& e) {  // bad settings found at run time: a usage error
    const std::string command = app.get_subcommands().front()->get_name();
    std::fprintf(stderr, "dbs-scheduler %s: %s\n", command.c_str(), e.what());
    return dbs::cli::usage_error;
  } catch (const std::exception& e) {
    return dbs::cli::fail("dbs-scheduler", e.what(), dbs::cli::runtime_error);
  }
}
