// One job's planning state in the daemon, without I/O: the plan of the epoch its ranks run now,
// the reports received for it, each rank's last report, the policy (the same code the agents
// embed) and what the status page shows. The daemon journals each EpochOutcome and applies it
// with commit(); recovery applies the journalled outcomes the same way, so a restarted daemon
// continues exactly where the journal ends.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lib/policy/policy.h"
#include "lib/proto/messages.h"

namespace dbs::scheduler {

// One planned epoch: what the journal records and the trace shows.
struct EpochOutcome {
  std::int64_t epoch = 0;            // the reported epoch (0-based)
  std::vector<Report> reports;       // received ones, by rank
  std::vector<int> missing;          // ranks planned from their last report
  Plan plan;                         // the plan of epoch + 1
  std::vector<double> policy_state;  // after planning
};

// What a rank said of itself when it registered: the status page shows it, the journal keeps it.
struct RankInfo {
  std::string host;
  std::string waiting;  // how it waits in collectives and why ("" = not said)
  bool operator==(const RankInfo&) const = default;
};

// What the status page charts: one row per planned epoch.
struct EpochHistory {
  std::int64_t epoch = 0;          // 0-based
  std::vector<int> batch;          // per rank, what it ran with (0 = no report)
  std::vector<double> throughput;  // per rank, samples / compute_s (0 = no report)
  double efficiency = 0;           // 0 = not every rank reported
  double measured_s = 0;           // slowest reported compute_s + comm_s, seconds (0 = none)
};

class Job {
 public:
  enum class Accepted { first, pending, complete, duplicate };
  static constexpr std::size_t kHistory = 1000;          // epochs kept for the charts, at most
  static constexpr std::size_t kHistoryCells = 1 << 17;  // and at most this many rank-epochs
  static constexpr std::size_t kHistoryMin = 16;         // but at least this many epochs
  std::size_t history_kept() const;                      // epochs kept for this world

  // Throws ConfigError when the policy spec or config is invalid.
  Job(std::string id, int world, Settings config);

  // A validated report of rank r (0 <= r < world). Throws ProtocolError(state) for an epoch
  // older than the one just planned. A report of a later epoch than expected moves the job
  // to it (the agents ran epochs on their own policy); reports for the old epoch are dropped.
  Accepted add(const Report& report);
  bool has_pending() const { return received_ > 0; }
  // The plan of the next epoch from the reports received (missing ranks use their last
  // report; timeout_s is named in the reason). Advances the policy; the caller journals the
  // outcome and passes it to commit(), which applies it to the rest of the job. Never throws
  // for bad figures: when the policy refuses the reports, or makes a plan an agent would
  // refuse (proto::plan_refusal), the plan is kept and the reason says why.
  EpochOutcome plan(double timeout_s);
  void commit(const EpochOutcome& outcome);

  const std::string& id() const { return id_; }
  int world() const { return world_; }
  const Settings& config() const { return config_; }
  const Plan& current() const { return plan_; }  // the plan of the running epoch
  // The plan the last planned epoch ran under (batch sizes as its ranks reported them when all
  // did), nullptr before the first planned epoch. After the last epoch of a job, current() is
  // the plan of an epoch that never runs: what ran is this one.
  const Plan* ran() const { return plans_ > 0 ? &ran_ : nullptr; }
  const Plan& initial() const { return initial_; }
  std::int64_t reports() const { return reports_; }  // reports planned from
  std::int64_t plans() const { return plans_; }
  std::int64_t changes() const { return changes_; }
  std::int64_t timeouts() const { return timeouts_; }
  const std::vector<EpochHistory>& history() const { return history_; }
  const std::vector<Report>& last_reports() const { return last_; }  // epoch -1 = none
  void set_rank_info(int rank, RankInfo info) {
    rank_info_[static_cast<std::size_t>(rank)] = std::move(info);
  }
  const std::vector<RankInfo>& rank_info() const { return rank_info_; }

 private:
  std::string id_;
  int world_;
  Settings config_;
  std::unique_ptr<policy::Policy> policy_;
  Plan initial_, plan_, ran_;
  std::vector<Report> pending_, last_;
  std::vector<char> have_;
  int received_ = 0;
  std::vector<RankInfo> rank_info_;
  std::vector<EpochHistory> history_;
  std::int64_t reports_ = 0, plans_ = 0, changes_ = 0, timeouts_ = 0;
};

// Journal and trace forms of an outcome (the journal's "epoch" record; lib/trace records).
// A report's rank info is in its record as "host" and, where said, "waiting".
nlohmann::json outcome_json(const std::string& job, const EpochOutcome& outcome,
                            const std::vector<RankInfo>& ranks);
EpochOutcome outcome_from_json(const nlohmann::json& record, int world);  // throws FieldError
// The rank records, an eval record and the plan record. The daemon sees no clock of the ranks:
// the eval record's wall_s is the slowest rank's compute_s + comm_s, which leaves out the
// per-step work outside both (optimizer update, data). An epoch planned without some ranks'
// reports has "missing" in its eval record.
std::string trace_lines(const EpochOutcome& outcome, const std::vector<RankInfo>& ranks);

}  // namespace dbs::scheduler
