// The CPU quota of this process's cgroup and how often it was throttled (Linux, cgroup v1 cpu
// controller or cgroup v2), for the trace: a node held at a quota is slow by design.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace dbs {

struct CpuQuota {
  double cores = 0;               // quota / period in cores; 0 = no quota
  double period_s = 0;            // the CFS period the quota is granted in, seconds
  std::int64_t nr_throttled = 0;  // periods in which the cgroup was throttled (since creation)
  double throttled_s = 0;         // total time throttled, seconds (since creation)
};

// This process's cgroup paths from /proc/self/cgroup ("ID:controllers:path" per hierarchy, v2 is
// "0::path"), relative to the hierarchy's mount; "" where the process has none.
struct CgroupPaths {
  std::string v1_cpu;  // the cgroup v1 hierarchy holding the cpu controller
  std::string v2;      // the cgroup v2 hierarchy
};
CgroupPaths own_cgroup_paths();

// The quota and counters of the cgroup this process is in; nullopt when they cannot be read.
std::optional<CpuQuota> read_cpu_quota();

}  // namespace dbs
