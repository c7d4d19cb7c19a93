// The records a training run writes about its own epochs, each one struct with one JSON form:
// "eval" (the end of an epoch), "timing" (where a rank's epoch went) and "cpu" (a rank's CPU
// quota and throttling). Written by lib/train (and eval by the daemon and replay --synthesize),
// read by lib/replay. In memory epochs count from 0; in the JSON from 1.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lib/common/fields.h"

namespace dbs::trace {

// Rank 0's control plane at the end of an epoch, seconds: what the epoch's end costs besides its
// steps (and the evaluation, the trace and the checkpoint).
struct Control {
  double reports_s = 0;  // the allgather of every rank's report, timing and CPU figures, and
                         // its check (the plan that ran and the parameters, the stop signal)
                         // and, with a daemon, every rank's share of its plan
  // The part of the total before the last rank reached the epoch's end (by the ranks' wall
  // clocks: exact on one host, as close as the hosts' clocks are across them): the spread of
  // the ranks' ends of the epoch's last step, which the next step's allreduce would wait out
  // were there no epoch end.
  double waited_s = 0;
  double plan_s = 0;    // the planner's next plan: the policy, or the wait for the daemon's (before
                        // the allgather: daemon_s of it) and the ranks' agreement on it
  double daemon_s = 0;  // waiting for this rank's share of the daemon's plan (0: embedded)
  double total_s() const { return reports_s + plan_s; }
};
nlohmann::json to_json(const Control& c);
Control control_from_json(const Fields& f);

// "eval": the end of an epoch.
struct Eval {
  std::int64_t epoch = 0;
  double wall_s = 0;        // training time of the epoch, seconds (no evaluation)
  double images_per_s = 0;  // samples / wall_s
  double ideal_s = 0;       // samples / sum of the ranks' throughputs
  double efficiency = 0;    // ideal_s / wall_s
  int replans = 0;          // plan changes inside the epoch
  int averages = 0;         // model averages in the epoch (0: synchronous; absent from JSON)
  // The agent's evaluation (absent from the daemon's records): mean training loss over the
  // epoch's samples, test loss and accuracy (a fraction).
  std::optional<double> train_loss, test_loss, test_acc;
  // Per rank, the fraction of wall_s it worked, and the epoch at the best split for the speeds
  // the ranks had (EpochResult::busy_ideal_s); both absent when busy is empty.
  std::vector<double> busy;
  double busy_ideal_s = 0;
  // The daemon's: ranks whose reports it planned without (at its report timeout).
  std::vector<int> missing;
  std::optional<Control> control;  // the agent's
};
// An eval of `samples` samples trained in wall_s by ranks of these throughputs (samples/s;
// ideal_s is policy::ideal_time of them).
Eval eval_of(std::int64_t epoch, double wall_s, double samples, std::span<const double> throughput,
             int replans);
nlohmann::json to_json(const Eval& e);
// Throws FieldError (through f) for a malformed record.
Eval eval_from_json(const Fields& f);

// Wall and CPU seconds of one phase of the step loop, summed over an epoch's steps.
struct Phase {
  double wall_s = 0;
  double cpu_s = 0;  // CPU of the training thread (CLOCK_THREAD_CPUTIME_ID)
};

// "timing": where one rank's epoch went (trivially copyable: allgathered as bytes). A step is:
// gather (copy its slice of the global batch), compute (forward + backward + gradient copy +
// injected slowdown), allreduce (incl. waiting for the other ranks), update (optimizer).
struct Timing {
  Phase gather, compute, allreduce, update;
  double sleep_s = 0;  // injected slowdown inside compute, wall seconds
  // gather + compute + update at the rank's sustained rate (wall, or SustainedTime where a quota
  // holds the rank below its threads), seconds: the time the epoch's work needed on this rank
  double busy_s = 0;
  double process_cpu_s = 0;  // CPU of every thread of the process over the epoch
  double wall_s = 0;         // the step loop's wall time
  std::int64_t steps = 0;
  double quota_cores = 0;          // the cgroup's CPU quota, cores (0 = none)
  std::int64_t nr_throttled = -1;  // quota periods throttled during the epoch (-1 = unknown)
  double throttled_s = -1;         // time throttled during the epoch, seconds (-1 = unknown)
};
struct TimingRecord {
  std::int64_t epoch = 0;
  int rank = 0;
  Timing timing;
};
nlohmann::json to_json(const TimingRecord& r);
TimingRecord timing_from_json(const Fields& f);

// "cpu": a rank's CPU quota and its cumulative throttling (since the cgroup was made) after an
// epoch; written for ranks held by a quota or ever throttled.
struct CpuRecord {
  std::int64_t epoch = 0;
  int rank = 0;
  std::string host;
  double quota_cores = 0;         // 0 = no quota
  std::int64_t nr_throttled = 0;  // quota periods throttled
  double throttled_s = 0;         // seconds throttled
  double period_s = 0;            // the quota's CFS period, seconds (0 = not recorded)
};
nlohmann::json to_json(const CpuRecord& r);
CpuRecord cpu_from_json(const Fields& f);

}  // namespace dbs::trace
