// A CPU cgroup of its own for this process, for benchmarks that hold a rank to a CPU quota
// (dbs-lab balance --quota). cgroup v1 (the cpu controller mounted at /sys/fs/cgroup/cpu) or
// cgroup v2 (cpu.max, when the parent enables the cpu controller). The group is created under
// the cgroup the process is in, named by the caller; the destructor moves the process back and
// removes the group, so nothing is left behind unless the process is killed or aborted (then
// remove_leftovers, at the next start, or the experiment script removes them by name).
#pragma once

#include <string>

namespace dbs::lab {

class CpuCgroup {
 public:
  static constexpr int kPeriodUs = 100000;  // cfs period, microseconds

  // Creates the group `name`, sets its quota to cores * kPeriodUs (cores <= 0: no quota) and
  // moves the whole process (every thread) into it. Throws Error naming the file and errno's
  // message when the machine does not allow it (no cpu controller, not root, read-only).
  CpuCgroup(const std::string& name, double cores);
  ~CpuCgroup();
  CpuCgroup(const CpuCgroup&) = delete;
  CpuCgroup& operator=(const CpuCgroup&) = delete;

  const std::string& path() const { return dir_; }

  // Removes the empty groups named PREFIX<pid>-rank<r> beside this process's cgroup whose <pid>
  // (the launcher that named them) is gone: what a killed or aborted run left. Never those of
  // pid `own`, this job's launcher: on another host than the launcher's, that pid is not a
  // process there, and a group another rank just made is still empty. Returns how many.
  static int remove_leftovers(const std::string& prefix, long own);

 private:
  std::string parent_;  // the cgroup directory the process came from
  std::string dir_;     // the group's directory
  bool v2_ = false;
};

}  // namespace dbs::lab
