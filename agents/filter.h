// dbs-agent filter: the noise filter of issue 13 as a subcommand of the agent (agents/filter.cpp).
#pragma once

namespace dbs::agent {

// Runs `dbs-agent filter ...`; argv[0] is "filter". Returns the process exit code.
int filter_main(int argc, char** argv);

}  // namespace dbs::agent
