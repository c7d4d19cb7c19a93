// `dbs-scheduler replay` as a library call: a trace in, the simulated runs of one or more
// policies out, each compared with `static` and, for the policy the trace was recorded with, with
// the recorded times.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "lib/replay/fit.h"
#include "lib/replay/reader.h"
#include "lib/replay/simulate.h"

namespace dbs::replay {

struct ReplayOptions {
  std::vector<PolicySpec> policies;  // empty = the policy the trace was recorded with
  // Settings other than the trace's, in their JSON form: {"min_gain": 0.05, ...}.
  nlohmann::json settings = nlohmann::json::object();
  CostOptions cost;
};

struct Replay {
  std::string path;
  Header header;
  Cluster cluster;
  Fit fit;
  std::vector<SimResult> results;  // one per policy asked for, in that order
  SimResult baseline;              // `static` with the same settings: the speedups' reference
  std::vector<double> recorded_s;  // wall_s of each epoch of the trace
  double recorded_total_s = 0;
  int recorded = -1;      // index of the result that replays the run as recorded
  int plans_matched = 0;  // epochs where that result ran the recorded plans exactly

  double speedup(const SimResult& r) const {
    return r.total_s > 0 ? baseline.total_s / r.total_s : 0.0;
  }
  // (simulated - recorded) / recorded for the result `recorded` (0 when there is none).
  double error() const;
};

// Throws ConfigError for a policy or bounds that do not fit the trace.
Replay replay(const Trace& trace, const ReplayOptions& options);

// "dbs,static , fixed:96,32" -> {dbs, static, fixed:96,32}: splits at commas, except inside a
// fixed: list (a comma followed by a digit continues it), and reads each (parse_policy, whose
// ConfigError names the one at fault); drops repeats.
std::vector<PolicySpec> split_policies(const std::string& list);

}  // namespace dbs::replay
