#include "bench/cgroup.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "lib/common/error.h"

namespace dbs::bench {
namespace {

constexpr const char* kV1Root = "/sys/fs/cgroup/cpu";
constexpr const char* kV2Root = "/sys/fs/cgroup";

// The cgroup path of this process for the v1 cpu controller ("" if none) and for v2.
void own_paths(std::string& v1, std::string& v2) {
  std::ifstream f("/proc/self/cgroup");
  for (std::string line; std::getline(f, line);) {
    const auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (controllers.empty()) {
      v2 = path;
      continue;
    }
    std::stringstream ss(controllers);
    for (std::string c; std::getline(ss, c, ',');)
      if (c == "cpu") v1 = path;
  }
}

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
  std::string v1, v2;
  own_paths(v1, v2);
  if (exists(std::string(kV1Root) + "/cpu.cfs_quota_us")) {
    parent_ = kV1Root + strip_slash(v1);
  } else if (exists(std::string(kV2Root) + "/cgroup.controllers")) {
    v2_ = true;
    parent_ = kV2Root + strip_slash(v2);
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
