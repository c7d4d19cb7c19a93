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
// Each rank's work per step (alpha + beta * b in the last epoch, and whether the fixed cost was
// fitted or assumed; a held rank's quota), or a summary line beyond 8 ranks; "" without ranks.
std::string describe_ranks(const Replay& replay);

std::string text_summary(const Replay& replay);

// {"<policy spec>": {"total_s", "ideal_s", "efficiency", "speedup_vs_static", "plan_changes",
//   "rebalance_every", "allreduce_s" and "overhead_s" (per step), "where" (where the time goes:
//   "balanced_s", "imbalance_s", "exchange_s", "overhead_s", summing to total_s), "epochs":
//   [{"epoch", "time_s", "ideal_s", "efficiency", "changes", "where"}], and for the policy the
//   trace was recorded with "recorded_total_s", "recorded_where" (the recorded run's), "error"
//   ((simulated - recorded) / recorded) and "plans_matched" (epochs run under exactly the
//   recorded plans)}, ...}
nlohmann::json json_summary(const Replay& replay);

}  // namespace dbs::replay
