// The messages of the protocol (lib/proto/protocol.h tells when each is sent).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "lib/policy/plan.h"

namespace dbs::proto {

struct RegisterMsg {
  std::string job;                 // job id: 1-64 of A-Z a-z 0-9 . _ -, not starting with .
  std::string token;               // the job token ("" when the daemon runs without one)
  int rank = 0;                    // 0 <= rank < world
  int world = 1;                   // ranks of the job
  std::string host;                // the rank's host name (for traces and the status page)
  std::optional<Settings> config;  // required to create the job; empty = join only
  std::string waiting;  // how the rank waits in collectives and why (status page); "" = unsaid
  // Who the rank's user is: "munge:<credential>" of proto::munge_payload(job, rank), or "" (none).
  std::string auth;
  bool operator==(const RegisterMsg&) const = default;
};

struct ReportMsg {
  std::string job;
  Report report;  // report.epoch counts from 0 in memory
  bool operator==(const ReportMsg&) const = default;
};

// One rank's share of a plan: what is the rank's own (b_i, o_i, v_i), what is the same for every
// rank, and a hash of the whole plan, so a message is O(1) in the world size. The ranks rebuild
// the plan from their shares (lib/proto/share.h).
struct PlanMsg {
  std::string job;
  std::int64_t epoch = 0;  // counts from 0 in memory
  int rank = 0, world = 1;
  int global_batch = 0;
  int batch = 0, offset = 0;  // b_rank, o_rank
  double throughput = 0;      // v_rank the plan was made from
  double predicted_epoch_s = 0, ideal_epoch_s = 0;
  bool changed = false;
  std::string reason;
  std::uint64_t hash = 0;       // plan_hash of the whole plan
  double exchange_epoch_s = 0;  // the exchange's seconds in predicted_epoch_s (0 = not known)
  bool operator==(const PlanMsg&) const = default;
};

struct ErrorMsg {
  std::string code;  // name(ErrorCode), kept as text for newer peers
  std::string message;
  bool operator==(const ErrorMsg&) const = default;
};

struct HeartbeatMsg {
  bool operator==(const HeartbeatMsg&) const = default;
};

struct GoodbyeMsg {
  bool done = false;  // the job finished on this rank
  bool operator==(const GoodbyeMsg&) const = default;
};

using Message = std::variant<RegisterMsg, ReportMsg, PlanMsg, ErrorMsg, HeartbeatMsg, GoodbyeMsg>;

}  // namespace dbs::proto
