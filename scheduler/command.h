// A dbs-scheduler subcommand registers its options on the app and, when chosen, sets `action`
// to the function that runs it (returning the exit status). A ConfigError it throws is a usage
// error: main prints "dbs-scheduler COMMAND: message" and exits 2.
#pragma once

#include "lib/common/cli.h"

namespace dbs::scheduler {

using cli::Action;

void add_serve_command(CLI::App& app, Action& action);    // scheduler/serve/
void add_job_key_command(CLI::App& app, Action& action);  // scheduler/serve/
void add_backup_command(CLI::App& app, Action& action);   // scheduler/serve/
void add_restore_command(CLI::App& app, Action& action);  // scheduler/serve/
void add_replay_command(CLI::App& app, Action& action);   // scheduler/replay/
void add_bed_command(CLI::App& app, Action& action);      // scheduler/bed/

}  // namespace dbs::scheduler
