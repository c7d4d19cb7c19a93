// The plan of an epoch and the per-rank reports it is made from (DESIGN.md, "One epoch").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dbs::policy {

struct Plan {
  std::int64_t epoch = 0;         // epoch this plan is for (0-based)
  int global_batch = 0;           // B = sum of batch
  std::vector<int> batch;         // b_i per rank, sum == global_batch
  std::vector<int> offset;        // o_i: rank i takes [o_i, o_i + b_i) of each global batch
  std::vector<double> throughput; // v_i the plan was made from (samples/s; 0 = unknown)
  double predicted_epoch_s = 0;   // predicted epoch time under this plan (0 = unknown)
  double ideal_epoch_s = 0;       // N / sum v_i (0 = unknown)
  bool changed = false;           // differs from the previous epoch's plan
  std::string reason;             // one line: why this plan

  int world() const { return static_cast<int>(batch.size()); }
  bool operator==(const Plan&) const = default;
};

// What one rank measured in one epoch (or in the last K steps).
struct Report {
  int rank = 0;
  std::int64_t epoch = 0;
  int batch = 0;                  // b_i it ran with
  std::int64_t samples = 0;       // samples it computed
  double compute_s = 0;           // forward + backward (+ injected slowdown), seconds
  double comm_s = 0;              // allreduce incl. waiting, seconds
  double step_rate_median = 0;    // median over steps of samples/compute s (0 = unknown)
  std::int64_t steps = 0;         // steps it ran
};

// Offsets from batch sizes: o_0 = 0, o_i = o_{i-1} + b_{i-1}.
std::vector<int> offsets_of(const std::vector<int>& batch);

}  // namespace dbs::policy
