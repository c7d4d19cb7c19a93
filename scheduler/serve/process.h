// The standard process_* figures of a Prometheus client, read from /proc/self (Linux).
#pragma once

#include <optional>

namespace dbs::scheduler {

struct ProcessStats {
  double cpu_seconds = 0;         // user + system CPU time, seconds
  double resident_bytes = 0;      // resident set size
  double virtual_bytes = 0;       // virtual memory size
  double open_fds = 0;            // open file descriptors
  double max_fds = 0;             // the soft RLIMIT_NOFILE
  double start_time_seconds = 0;  // process start, seconds since the Unix epoch
};

// Nothing when /proc/self cannot be read (then the metrics leave the family out).
std::optional<ProcessStats> read_process_stats();

}  // namespace dbs::scheduler
