#include "lib/train/disturb.h"

#include <cmath>

namespace dbs::train {

Disturber::Disturber(const std::vector<trace::Disturbance>& all, int rank, int threads)
    : threads_(threads) {
  for (const auto& d : all)
    if (d.rank == rank) mine_.push_back(d);
}

Disturber::~Disturber() {
  stop_hogs();
}

void Disturber::update(double epoch_progress) {
  double hog_factor = 1.0;
  for (const auto& d : mine_)
    if (d.mode == trace::Disturbance::Mode::hog && d.active_at(epoch_progress + 1.0))
      hog_factor *= d.factor;
  const int want = static_cast<int>(std::lround((hog_factor - 1.0) * threads_));
  if (want == hog_count_) return;
  stop_hogs();
  stop_ = false;
  for (int i = 0; i < want; ++i)
    hogs_.emplace_back([this] {
      volatile double x = 1.0;
      while (!stop_.load(std::memory_order_relaxed)) x = x * 1.0000001 + 1e-9;
    });
  hog_count_ = want;
}

double Disturber::sleep_for(double epoch_progress, double compute_s) const {
  double f = 1.0;
  for (const auto& d : mine_)
    if (d.mode == trace::Disturbance::Mode::sleep && d.active_at(epoch_progress + 1.0))
      f *= d.factor;
  return (f - 1.0) * compute_s;
}

void Disturber::stop_hogs() {
  stop_ = true;
  for (auto& t : hogs_) t.join();
  hogs_.clear();
  hog_count_ = 0;
}

}  // namespace dbs::train
