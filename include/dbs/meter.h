// Step timings to a Report, the way every client of dbs measures (dbs-agent's training loop,
// the Python package, a C caller): the caller times each step of its rank and gives the meter
// what it saw; at the end of an epoch (or of a window of rebalance_every steps) the meter makes
// this rank's Report for the planner.
#pragma once

#include <dbs/plan.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace dbs {

class Meter {
 public:
  // One step of this rank, in seconds: `samples` samples in its slice (0 allowed), work_s its
  // work between two gradient allreduces (slice gathering, forward + backward, the optimizer
  // update; no waiting), comm_s the allreduce including the wait for the others, compute_s
  // forward + backward (< 0: the same as work_s). Throws InputError for a negative sample count
  // or a negative or non-finite time.
  void step(int samples, double work_s, double comm_s = 0, double compute_s = -1);
  // Steps recorded since construction or the last reset().
  std::int64_t steps() const { return static_cast<std::int64_t>(work_.size()); }
  // Rank `rank`'s report for epoch plan.epoch under plan from the steps recorded: samples,
  // compute and allreduce seconds summed, the median step rate (samples / compute s), and the
  // work times at the two batch sizes with the most steps. Throws InputError for a rank outside
  // the plan.
  Report report(const Plan& plan, int rank) const;
  // Forgets the steps recorded (at the start of an epoch or a window).
  void reset();

 private:
  std::vector<std::pair<int, double>> work_;            // (samples, work s) per step
  std::vector<std::pair<double, std::int64_t>> rates_;  // (samples / compute s, 1) per step
  std::int64_t samples_ = 0;
  double compute_s_ = 0, comm_s_ = 0;
};

}  // namespace dbs
