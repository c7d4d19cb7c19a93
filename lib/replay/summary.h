// What `dbs-scheduler replay` prints: a text table (per epoch and in total: simulated time,
// ideal time, efficiency, plan changes; a column per policy with the speedup over static) and
// the --json object (a key per policy).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "lib/replay/replay.h"

namespace dbs::replay {

// The model line: how a step is costed and where each figure came from.
std::string describe_model(const Replay& replay);

std::string text_summary(const Replay& replay);

// {"<policy spec>": {"total_s", "ideal_s", "efficiency", "speedup_vs_static", "plan_changes",
//   "rebalance_every", "allreduce_s", "overhead_s", "epochs": [{"epoch", "time_s", "ideal_s",
//   "efficiency", "changes"}], and for the policy the trace was recorded with "recorded_total_s"
//   "error" ((simulated - recorded) / recorded) and "plans_matched" (epochs run under exactly the
//   recorded plans)}, ...}
nlohmann::json json_summary(const Replay& replay);

}  // namespace dbs::replay
