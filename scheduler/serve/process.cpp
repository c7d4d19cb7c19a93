#include "scheduler/serve/process.h"

#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace dbs::scheduler {

std::optional<ProcessStats> read_process_stats() {
  // /proc/self/stat: "pid (comm) state f4 ... f52"; comm may hold spaces and ')', so the
  // fields are counted from the last ')'. Field 14 utime, 15 stime (clock ticks), 22 starttime
  // (ticks after boot), 23 vsize (bytes), 24 rss (pages).
  std::ifstream stat("/proc/self/stat");
  std::string all;
  if (!std::getline(stat, all)) return std::nullopt;
  const auto close = all.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(all.substr(close + 2));
  std::string field;
  double utime = 0, stime = 0, start = 0, vsize = 0, rss = 0;
  for (int n = 3; n <= 24 && rest >> field; ++n) {
    if (n == 14) utime = std::stod(field);
    if (n == 15) stime = std::stod(field);
    if (n == 22) start = std::stod(field);
    if (n == 23) vsize = std::stod(field);
    if (n == 24) rss = std::stod(field);
  }
  double boot = 0;  // /proc/stat "btime": boot time, seconds since the epoch
  std::ifstream proc_stat("/proc/stat");
  for (std::string key; proc_stat >> key;) {
    if (key == "btime") {
      proc_stat >> boot;
      break;
    }
    proc_stat.ignore(1 << 20, '\n');
  }
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  ProcessStats p;
  // The process's CPU clock counts nanoseconds; utime + stime count ticks (10 ms), and a daemon
  // that has served a small job in under a tick would show 0.
  timespec cpu{};
  p.cpu_seconds = ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu) == 0
                      ? static_cast<double>(cpu.tv_sec) + 1e-9 * static_cast<double>(cpu.tv_nsec)
                      : (utime + stime) / ticks;
  p.start_time_seconds = boot + start / ticks;
  p.virtual_bytes = vsize;
  p.resident_bytes = rss * static_cast<double>(::sysconf(_SC_PAGESIZE));
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end;
       it.increment(ec))
    ++p.open_fds;
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0)
    p.max_fds = static_cast<double>(limit.rlim_cur);  // RLIM_INFINITY: 2^64 - 1
  return p;
}

}  // namespace dbs::scheduler
