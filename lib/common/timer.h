// Stopwatches: wall clock (steady clock) and CPU time of the calling thread or the process,
// seconds as double.
#pragma once

#include <time.h>

#include <chrono>

namespace dbs {

class Stopwatch {
 public:
  Stopwatch() : start_(clock::now()) {}
  void reset() { start_ = clock::now(); }
  double seconds() const { return std::chrono::duration<double>(clock::now() - start_).count(); }

 private:
  using clock = std::chrono::steady_clock;
  clock::time_point start_;
};

// CPU seconds consumed so far by the calling thread (CLOCK_THREAD_CPUTIME_ID) or by the whole
// process, all threads (CLOCK_PROCESS_CPUTIME_ID); 0 if the clock cannot be read.
inline double cpu_seconds(clockid_t clock = CLOCK_THREAD_CPUTIME_ID) {
  timespec ts{};
  if (clock_gettime(clock, &ts) != 0) return 0.0;
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

}  // namespace dbs
