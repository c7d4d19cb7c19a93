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

// The work time of a rank held by a CPU quota of `cores` (below its threads), one stretch of work
// after another, at the rate the quota sustains: a stretch's process CPU time over the quota,
// times how far the wall time of the stretches so far has run past their CPU over the quota (1
// while it has not: the rank had its quota; more where it got less, as under a sleep or a busy
// machine). So their sum follows the larger of the stretches' total wall time and their total CPU
// over the quota. The larger of the two stretch by stretch would add up to more than either:
// throttling comes in lumps of a period, so the stretch that waits out the period is long by wall
// and the one that runs on the refilled quota by CPU. cores 0: not held, a stretch's work is its
// wall time.
class SustainedTime {
 public:
  explicit SustainedTime(double cores) : cores_(cores) {}
  // The work seconds of a stretch of wall_s seconds that used cpu_s of process CPU.
  double add(double wall_s, double cpu_s);
  double cores() const { return cores_; }

 private:
  double cores_;
  double wall_s_ = 0;       // the stretches' wall seconds so far
  double sustained_s_ = 0;  // their CPU seconds over the quota
};

}  // namespace dbs
