// dbs-lab subcommands: the studies and report writers kept apart from the product (built and
// tested, never installed). Each prints one JSON document on stdout (or a table, for `study
// report`). A subcommand registers its options on the app and, when chosen, sets `action` to
// the function that runs it.
#pragma once

#include "lib/common/cli.h"

namespace dbs::lab {

using cli::Action;

void add_balance_command(CLI::App& app, Action& action);   // balance_bench.cpp
void add_sweep_command(CLI::App& app, Action& action);     // sweep_report.cpp
void add_study_command(CLI::App& app, Action& action);     // study_report.cpp
void add_exchange_command(CLI::App& app, Action& action);  // exchange_gain.cpp

}  // namespace dbs::lab
