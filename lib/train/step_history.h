// Internal to lib/train: every rank's figures of every step of an epoch, which all ranks learn
// from the step's shared buffer (epoch.cpp), and reports over a range of steps from them.
#pragma once

#include <cstdint>
#include <vector>

#include "lib/policy/plan.h"

namespace dbs::train::detail {

struct StepHistory {
  int world = 0;
  // Step s, rank i at s * world + i: compute seconds, samples, work seconds (CostPoint).
  std::vector<float> time, count, work;

  // Appends one step's per-rank slots (world floats each).
  void add(const float* times, const float* counts, const float* works);
  // Zeros for steps [0, steps): an epoch continued from a checkpoint taken after them.
  void skip(std::int64_t steps);
  // Every rank's report over steps [begin, end) of `epoch` under `plan`.
  std::vector<Report> reports(std::int64_t epoch, const Plan& plan, std::int64_t begin,
                              std::int64_t end) const;
};

}  // namespace dbs::train::detail
