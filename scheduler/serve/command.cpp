#include <cstdio>

#include "scheduler/command.h"

namespace dbs::scheduler {

void add_serve_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("serve", "the planning daemon (not built yet)");
  cmd->callback([&action] {
    action = [] {
      std::fprintf(stderr, "dbs-scheduler serve: not built yet\n");
      return 2;
    };
  });
}

}  // namespace dbs::scheduler
