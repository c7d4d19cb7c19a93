// Open-file limit: a daemon holding thousands of agents needs more than the usual 1024.
#pragma once

#include <cstddef>

namespace dbs::net {

// Raises the soft RLIMIT_NOFILE towards `want` (at most the hard limit); returns the new soft
// limit. Never throws.
std::size_t raise_fd_limit(std::size_t want);

// How many connections fit in fd_limit descriptors when `reserve` of them are kept for other
// files (traces, journal, listeners, HTTP): min(wanted, fd_limit - reserve), 0 when none fit.
std::size_t connections_within(std::size_t fd_limit, std::size_t wanted, std::size_t reserve);

}  // namespace dbs::net
