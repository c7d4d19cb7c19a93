// Thread control for the TBB kernels: the number of threads the process may use.
#pragma once

#include <memory>

namespace dbs::nn {

class ThreadLimit {
 public:
  // threads <= 0: all hardware threads (what TBB would use anyway).
  explicit ThreadLimit(int threads);
  ~ThreadLimit();
  ThreadLimit(const ThreadLimit&) = delete;
  ThreadLimit& operator=(const ThreadLimit&) = delete;
  int threads() const { return threads_; }

 private:
  int threads_;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Hardware threads this process may run on (its CPU affinity mask, as TBB sees it).
int available_threads();

}  // namespace dbs::nn
