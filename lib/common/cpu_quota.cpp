#include "lib/common/cpu_quota.h"

#include <fstream>
#include <sstream>
#include <string>

namespace dbs {
namespace {

// Value of `key` in a "key value" per line file (cpu.stat), or -1.
std::int64_t stat_value(const std::string& path, const std::string& key) {
  std::ifstream f(path);
  std::string k;
  std::int64_t v = 0;
  while (f >> k >> v)
    if (k == key) return v;
  return -1;
}

std::optional<CpuQuota> read_v1(const std::string& dir) {
  std::ifstream q(dir + "/cpu.cfs_quota_us"), p(dir + "/cpu.cfs_period_us");
  double quota_us = 0, period_us = 0;
  if (!(q >> quota_us) || !(p >> period_us) || period_us <= 0) return std::nullopt;
  CpuQuota out;
  out.cores = quota_us > 0 ? quota_us / period_us : 0;
  out.period_s = period_us / 1e6;
  out.nr_throttled = stat_value(dir + "/cpu.stat", "nr_throttled");
  out.throttled_s = static_cast<double>(stat_value(dir + "/cpu.stat", "throttled_time")) * 1e-9;
  if (out.nr_throttled < 0) return std::nullopt;
  return out;
}

std::optional<CpuQuota> read_v2(const std::string& dir) {
  std::ifstream m(dir + "/cpu.max");
  std::string quota;
  double period_us = 0;
  if (!(m >> quota >> period_us) || period_us <= 0) return std::nullopt;
  CpuQuota out;
  out.cores = quota == "max" ? 0 : std::stod(quota) / period_us;
  out.period_s = period_us / 1e6;
  out.nr_throttled = stat_value(dir + "/cpu.stat", "nr_throttled");
  out.throttled_s = static_cast<double>(stat_value(dir + "/cpu.stat", "throttled_usec")) * 1e-6;
  if (out.nr_throttled < 0) return std::nullopt;
  return out;
}

}  // namespace

CgroupPaths own_cgroup_paths() {
  CgroupPaths own;
  std::ifstream f("/proc/self/cgroup");
  for (std::string line; std::getline(f, line);) {
    const auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (controllers.empty()) {
      own.v2 = path;
      continue;
    }
    std::stringstream ss(controllers);
    for (std::string c; std::getline(ss, c, ',');)
      if (c == "cpu") own.v1_cpu = path;
  }
  return own;
}

double SustainedTime::add(double wall_s, double cpu_s) {
  if (cores_ <= 0) return wall_s;
  const double sustained = cpu_s / cores_;
  wall_s_ += wall_s;
  sustained_s_ += sustained;
  return sustained_s_ > 0 && wall_s_ > sustained_s_ ? sustained * (wall_s_ / sustained_s_)
                                                    : sustained;
}

std::optional<CpuQuota> read_cpu_quota() {
  const CgroupPaths own = own_cgroup_paths();
  if (!own.v1_cpu.empty())
    for (const char* mount : {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"})
      if (auto q = read_v1(mount + own.v1_cpu)) return q;
  if (!own.v2.empty()) return read_v2("/sys/fs/cgroup" + own.v2);
  return std::nullopt;
}

}  // namespace dbs
