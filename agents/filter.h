// dbs-agent filter: the training-set noise filter as a subcommand of the agent (agents/filter.cpp).
#pragma once

namespace dbs::agent {

// Runs `dbs-agent filter ...`; argv[0] is "filter". Returns the process exit code.
int filter_main(int argc, char** argv);

}  // namespace dbs::agent
