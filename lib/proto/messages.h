// The messages of the protocol (lib/proto/protocol.h tells when each is sent).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "lib/policy/plan.h"
#include "lib/policy/policy.h"

namespace dbs::proto {

// What the daemon needs to run the job's policy; world travels beside it in RegisterMsg.
struct JobConfig {
  std::string policy = "dbs";          // dbs | static | fixed:b0,b1,...
  int global_batch = 128;              // B
  std::int64_t samples_per_epoch = 0;  // N
  int min_batch = 1;                   // per-rank bounds
  int max_batch = 0;                   // 0 = B
  double min_gain = 0.02;              // dbs keeps its plan below this predicted gain

  bool operator==(const JobConfig&) const = default;
  policy::PolicyConfig policy_config(int world) const;
};

// The JobConfig of a policy configuration (the agent's side of policy_config).
JobConfig job_config(const std::string& policy, const policy::PolicyConfig& config);

struct RegisterMsg {
  std::string job;                  // job id: 1-64 of A-Z a-z 0-9 . _ -, not starting with .
  std::string token;                // the job token ("" when the daemon runs without one)
  int rank = 0;                     // 0 <= rank < world
  int world = 1;                    // ranks of the job
  std::string host;                 // the rank's host name (for traces and the status page)
  std::optional<JobConfig> config;  // required to create the job; empty = join only
  bool operator==(const RegisterMsg&) const = default;
};

struct ReportMsg {
  std::string job;
  policy::Report report;  // report.epoch counts from 0 in memory
};
bool operator==(const ReportMsg& a, const ReportMsg& b);

struct PlanMsg {
  std::string job;
  policy::Plan plan;  // plan.epoch counts from 0 in memory
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
