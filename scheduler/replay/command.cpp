#include <cstdio>

#include "scheduler/command.h"

namespace dbs::scheduler {

void add_replay_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("replay", "trace replay (not built yet)");
  cmd->callback([&action] {
    action = [] {
      std::fprintf(stderr, "dbs-scheduler replay: not built yet\n");
      return 2;
    };
  });
}

}  // namespace dbs::scheduler
