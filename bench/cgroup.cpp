#include "bench/cgroup.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>

#include "lib/common/cpu_quota.h"
#include "lib/common/error.h"

namespace dbs::bench {
namespace {

constexpr const char* kV1Root = "/sys/fs/cgroup/cpu";
constexpr const char* kV2Root = "/sys/fs/cgroup";

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  if (!f) throw Error("cannot open " + path + " for writing: " + std::strerror(errno));
  f << text << std::flush;
  if (!f) throw Error("cannot write '" + text + "' to " + path + ": " + std::strerror(errno));
}

std::string strip_slash(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p == "/" ? "" : p;
}

}  // namespace

CpuCgroup::CpuCgroup(const std::string& name, double cores) {
  const CgroupPaths own = own_cgroup_paths();
  if (exists(std::string(kV1Root) + "/cpu.cfs_quota_us")) {
    parent_ = kV1Root + strip_slash(own.v1_cpu);
  } else if (exists(std::string(kV2Root) + "/cgroup.controllers")) {
    v2_ = true;
    parent_ = kV2Root + strip_slash(own.v2);
  } else {
    throw Error(std::string("no CPU cgroup controller: neither ") + kV1Root +
                "/cpu.cfs_quota_us (cgroup v1) nor " + kV2Root +
                "/cgroup.controllers (cgroup v2) exists");
  }
  dir_ = parent_ + "/" + name;
  if (::mkdir(dir_.c_str(), 0755) != 0)
    throw Error("cannot create the CPU cgroup " + dir_ + ": " + std::strerror(errno) +
                " (needs root and a writable cgroup file system)");
  try {
    const long quota = cores > 0 ? std::lround(cores * kPeriodUs) : -1;
    if (v2_) {
      write_file(dir_ + "/cpu.max", (quota > 0 ? std::to_string(quota) : std::string("max")) +
                                        " " + std::to_string(kPeriodUs));
    } else {
      write_file(dir_ + "/cpu.cfs_period_us", std::to_string(kPeriodUs));
      write_file(dir_ + "/cpu.cfs_quota_us", std::to_string(quota));
    }
    write_file(dir_ + "/cgroup.procs", std::to_string(::getpid()));
  } catch (...) {
    ::rmdir(dir_.c_str());
    throw;
  }
}

CpuCgroup::~CpuCgroup() {
  try {
    write_file(parent_ + "/cgroup.procs", std::to_string(::getpid()));
  } catch (...) {
    // The group stays non-empty only if this fails; rmdir then fails too and the experiment
    // script removes it after the process is gone.
  }
  ::rmdir(dir_.c_str());
}

}  // namespace dbs::bench
