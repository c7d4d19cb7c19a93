// A Prometheus histogram: counts of observations at or below each upper bound, their sum and
// count. Not thread-safe: its owner locks (Journal) or keeps it on the io thread (JobTable).
#pragma once

#include <cstdint>
#include <vector>

namespace dbs::scheduler {

struct Histogram {
  explicit Histogram(std::vector<double> upper_bounds = {})
      : bounds(std::move(upper_bounds)), counts(bounds.size(), 0) {}
  void observe(double v) {
    for (std::size_t i = 0; i < bounds.size(); ++i)
      if (v <= bounds[i]) ++counts[i];  // cumulative, as exposed: bucket le=b counts v <= b
    sum += v;
    ++count;
  }
  std::vector<double> bounds;         // ascending upper bounds; +Inf is implied (= count)
  std::vector<std::uint64_t> counts;  // cumulative: observations <= bounds[i]
  double sum = 0;
  std::uint64_t count = 0;
};

// Bucket bounds in seconds: the report-to-plan latency (planning plus the journal sync) and the
// journal's write + fdatasync.
inline std::vector<double> plan_latency_buckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}
inline std::vector<double> journal_sync_buckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1};
}

}  // namespace dbs::scheduler
