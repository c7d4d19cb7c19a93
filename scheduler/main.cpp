// dbs-scheduler: `serve` (the daemon on the head node) and `replay` (the policy code over a
// recorded trace).
#include <cstdio>
#include <exception>

#include "scheduler/command.h"

int main(int argc, char** argv) {
  CLI::App app{"dbs-scheduler: the dbs planning daemon and the trace replayer.\n"
               "Examples: dbs-scheduler serve --listen 127.0.0.1:7070 --state-dir /var/lib/dbs\n"
               "          dbs-scheduler replay traces/disturbed.jsonl --compare dbs,static"};
  app.require_subcommand(1);
  dbs::scheduler::Action action;
  dbs::scheduler::add_serve_command(app, action);
  dbs::scheduler::add_replay_command(app, action);
  CLI11_PARSE(app, argc, argv);
  try {
    return action ? action() : 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dbs-scheduler: error: %s\n", e.what());
    return 1;
  }
}
