// The plan of an epoch, the per-rank reports it is made from and the settings of the policy that
// makes it (docs/concepts/architecture.md, "One epoch"). This is their one definition; their JSON
// forms are internal to dbs (the protocol, the daemon's journal, the trace and replay).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dbs {

struct Plan {
  std::int64_t epoch = 0;          // epoch this plan is for (0-based)
  int global_batch = 0;            // B = sum of batch
  std::vector<int> batch;          // b_i per rank, sum == global_batch
  std::vector<int> offset;         // o_i: rank i takes [o_i, o_i + b_i) of each global batch
  std::vector<double> throughput;  // v_i the plan was made from (samples/s; 0 = unknown)
  double predicted_epoch_s = 0;    // predicted epoch time under this plan (0 = unknown)
  double exchange_epoch_s = 0;     // the part of it spent exchanging: the gradient allreduces,
                                   // or the model averages (Settings::average_every); 0 = unknown
  double ideal_epoch_s = 0;        // N / sum v_i (0 = unknown)
  bool changed = false;            // differs from the previous epoch's plan
  std::string reason;              // one line: why this plan

  int world() const { return static_cast<int>(batch.size()); }
  bool operator==(const Plan&) const = default;
};

// Step times of one rank at one local batch size, for the cost model t(b) = alpha + beta * b
// (lib/policy/cost.h). A step's work time is everything the rank does between two gradient
// allreduces: gathering its slice, forward + backward (+ injected slowdown), the optimizer
// update; waiting in the allreduce is not work. On a rank held to a CPU quota below its threads,
// at least that work's CPU time divided by the quota.
struct CostPoint {
  int batch = 0;           // local batch size b of these steps (0 = no point)
  std::int64_t steps = 0;  // steps measured at b
  double mean_s = 0;       // mean work time per step, seconds
  double sd_s = 0;         // standard deviation of the work time per step, seconds
  bool operator==(const CostPoint&) const = default;
};

// What one rank measured in one epoch (or in the last K steps). dbs::Meter (<dbs/meter.h>)
// makes one from step timings.
struct Report {
  int rank = 0;
  std::int64_t epoch = 0;
  int batch = 0;                // b_i it ran with
  std::int64_t samples = 0;     // samples it computed
  double compute_s = 0;         // forward + backward (+ injected slowdown), seconds
  double comm_s = 0;            // allreduce incl. waiting, seconds
  double step_rate_median = 0;  // median over steps of samples/compute s (0 = unknown)
  std::int64_t steps = 0;       // steps it ran
  // Work time at the two batch sizes it ran most steps with (most first; the plan's b and the
  // short last step, or the sizes before and after a re-plan); batch 0 = none. Fixed size so
  // a Report stays trivially copyable (it is allgathered as bytes).
  std::array<CostPoint, 2> work{};

  // samples / compute_s in samples/s; 0 without a measurement.
  double throughput() const {
    return compute_s > 0 ? static_cast<double>(samples) / compute_s : 0.0;
  }
  bool operator==(const Report&) const = default;
};

// The policy that makes the plans, read once from its name where a program first takes it
// (parse_policy) and passed on as this value.
struct PolicySpec {
  enum class Kind {
    dbs,          // "dbs": the per-rank cost model where reports carry work times, else by speed
    dbs_rate,     // "dbs-rate": batch sizes in proportion to the measured speed
    equal_split,  // "static": the equal split, never re-planned
    fixed,        // "fixed:b0,b1,...": the sizes given, never re-planned
  };
  Kind kind = Kind::dbs;
  std::vector<int> sizes;  // fixed: b_i of each rank, every one >= 1; empty for the others

  bool operator==(const PolicySpec&) const = default;
};

// The policy named by text: "dbs", "dbs-rate", "static" or "fixed:b0,b1,..." ("dbs-cost", the
// cost model's name in old journals and traces, reads as dbs). Throws ConfigError "policy
// 'TEXT': ..." for another name or a fixed: size that is not an integer >= 1. Whether fixed:
// sizes number the ranks and sum to the global batch is make_planner's to check: it knows both.
PolicySpec parse_policy(std::string_view text);
// The name parse_policy reads back: "dbs", "dbs-rate", "static" or "fixed:64,32".
std::string to_string(const PolicySpec& policy);

// What a policy needs besides the world size: the same for every rank of a job (make_planner
// checks that they agree), carried by the protocol and the trace header.
struct Settings {
  PolicySpec policy;                   // dbs unless set
  int global_batch = 128;              // B, kept by every plan
  std::int64_t samples_per_epoch = 0;  // N (for epoch-time predictions; 0 = unknown)
  int min_batch = 1;                   // per-rank lower bound
  int max_batch = 0;                   // per-rank upper bound (0 = B)
  double min_gain = 0.02;              // dbs keeps its plan below this predicted gain
  int rebalance_every = 0;             // re-plan every K steps inside an epoch (0 = per epoch)
  // Periodic model averaging (local SGD): from epoch average_after_epochs on (0-based; the
  // epochs before it are synchronous), each rank steps its own model on its slice and the ranks
  // average their models, weighted by the samples each trained since the last average, after
  // every average_every-th step of an epoch and after its last step. 0 = synchronous throughout.
  int average_every = 0;
  int average_after_epochs = 0;

  int max_batch_or_global() const { return max_batch == 0 ? global_batch : max_batch; }
  // Whether epoch (0-based) averages models instead of exchanging the gradient every step.
  bool averages_in(std::int64_t epoch) const {
    return average_every > 0 && epoch >= average_after_epochs;
  }
  // The exchanges of epoch (0-based) over `steps` steps: one per step when synchronous, else
  // one after every average_every-th step and one after the last, ceil(steps / average_every).
  std::int64_t exchanges(std::int64_t epoch, std::int64_t steps) const {
    return averages_in(epoch) ? (steps + average_every - 1) / average_every : steps;
  }
  bool operator==(const Settings&) const = default;
};

// Offsets from batch sizes: o_0 = 0, o_i = o_{i-1} + b_{i-1}.
std::vector<int> offsets_of(const std::vector<int>& batch);

}  // namespace dbs
