#include "lab/cgroup.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <system_error>

#include "lib/common/cpu_quota.h"
#include "lib/common/error.h"

namespace dbs::lab {
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

// The directory of the cgroup this process is in, in the hierarchy that has the cpu controller.
std::string parent_dir(bool& v2) {
  const CgroupPaths own = own_cgroup_paths();
  v2 = false;
  if (exists(std::string(kV1Root) + "/cpu.cfs_quota_us")) return kV1Root + strip_slash(own.v1_cpu);
  if (exists(std::string(kV2Root) + "/cgroup.controllers")) {
    v2 = true;
    return kV2Root + strip_slash(own.v2);
  }
  throw Error(std::string("no CPU cgroup controller: neither ") + kV1Root +
              "/cpu.cfs_quota_us (cgroup v1) nor " + kV2Root +
              "/cgroup.controllers (cgroup v2) exists");
}

// "PID-rank" followed by digits, PID a positive number: its PID, else 0.
long owner_of(std::string_view rest) {
  const std::size_t dash = rest.find("-rank");
  if (dash == 0 || dash == std::string_view::npos || dash > 9) return 0;
  const std::string_view pid = rest.substr(0, dash), rank = rest.substr(dash + 5);
  const auto digits = [](std::string_view t) {
    return !t.empty() && t.find_first_not_of("0123456789") == std::string_view::npos;
  };
  return digits(pid) && digits(rank) ? std::stol(std::string(pid)) : 0;
}

}  // namespace

int CpuCgroup::remove_leftovers(const std::string& prefix, long own) {
  bool v2 = false;
  const std::string parent = parent_dir(v2);
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(parent, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(prefix)) continue;
    const long pid = owner_of(std::string_view(name).substr(prefix.size()));
    if (pid <= 0 || pid == own || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH)
      continue;
    if (::rmdir(entry.path().c_str()) == 0) ++removed;  // fails if a process is still in it
  }
  return removed;
}

CpuCgroup::CpuCgroup(const std::string& name, double cores) {
  parent_ = parent_dir(v2_);
  dir_ = parent_ + "/" + name;
  if (::mkdir(dir_.c_str(), 0755) != 0)
    throw Error("cannot create the CPU cgroup " + dir_ + ": " + std::strerror(errno) +
                " (needs root and a writable cgroup file system)");
  try {
    const long quota = cores > 0 ? std::lround(cores * kPeriodUs) : -1;
    if (v2_) {
      write_file(dir_ + "/cpu.max", (quota > 0 ? std::to_string(quota) : std::string("max")) + " " +
                                        std::to_string(kPeriodUs));
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

}  // namespace dbs::lab
