// The ideal epoch time (docs/concepts/cost-model.md): N / sum_i v_i, the seconds an epoch of N
// samples takes when every step is split in proportion to the ranks' throughputs v_i (samples/s)
// and nothing else costs time (no communication, no overhead). The plan's ideal_epoch_s, the
// daemon's efficiency, replay's ideal and the lab's balance study are this number.
#pragma once

#include <numeric>
#include <span>

namespace dbs::policy {

// samples / sum of throughput, in s; 0 (unknown) when the sum is not > 0. A rank whose
// throughput is 0 (not measured) adds nothing to the sum.
inline double ideal_time(std::span<const double> throughput, double samples) {
  const double sum = std::accumulate(throughput.begin(), throughput.end(), 0.0);
  return sum > 0 ? samples / sum : 0.0;
}

}  // namespace dbs::policy
