// Open-file limit: a daemon holding thousands of agents needs more than the usual 1024.
#pragma once

#include <cstddef>

namespace dbs::net {

// Raises the soft RLIMIT_NOFILE towards `want` (at most the hard limit); returns the new soft
// limit. Never throws.
std::size_t raise_fd_limit(std::size_t want);

}  // namespace dbs::net
