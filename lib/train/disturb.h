// Injected disturbance on this rank: `sleep` stretches each step's compute time by the factor,
// `hog` keeps (factor - 1) x threads busy threads spinning on the rank's cores while active.
#pragma once

#include <atomic>
#include <thread>
#include <vector>

#include "lib/train/config.h"

namespace dbs::train {

class Disturber {
 public:
  Disturber(const std::vector<trace::Disturbance>& all, int rank, int threads);
  ~Disturber();
  Disturber(const Disturber&) = delete;
  Disturber& operator=(const Disturber&) = delete;

  // epoch_progress is 0-based (epoch + step / steps), as in the training loop.
  // Called before each step: starts or stops hog threads.
  void update(double epoch_progress);
  // Extra seconds to sleep after a step whose compute took compute_s (sleep mode).
  double sleep_for(double epoch_progress, double compute_s) const;
  // The disturbances of this rank (for the trace).
  const std::vector<trace::Disturbance>& mine() const { return mine_; }

 private:
  void stop_hogs();
  std::vector<trace::Disturbance> mine_;
  int threads_;
  int hog_count_ = 0;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> hogs_;
};

}  // namespace dbs::train
