// Reads a whole dbs-trace (format in traces/README.md) into per-epoch structs. Every line is
// checked; anything malformed throws InputError "FILE:LINE: what is wrong".
//
// A last line without its newline that is not valid JSON is what a crash in the middle of a
// write leaves: it is skipped with a warning (an error with ReadOptions::strict). Records of an
// epoch that never got its eval record (the run stopped during it) are dropped with a warning.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "lib/policy/plan.h"
#include "lib/replay/model.h"
#include "lib/trace/records.h"

namespace dbs::replay {

// The header's config, the fields replay uses; `config` keeps all of it.
struct Header {
  int version = 0;  // of the trace format
  int world = 0;
  Settings settings;        // the run's; samples_per_epoch >= 1
  std::int64_t params = 0;  // model parameters (0 = not recorded)
  int epochs = 0;           // epochs the run was asked for (0 = not recorded)
  nlohmann::json config;
};

// All records of one finished epoch.
struct EpochRecords {
  std::int64_t epoch = 0;       // counts from 0
  std::vector<PlanAt> plans;    // [0]: the plan it started under; then re-plans, by step
  std::vector<Report> reports;  // one per rank, indexed by rank
  std::vector<trace::Disturbance> disturbances;  // ground truth of injected slowdowns active in it
  double wall_s = 0;                             // training time of the epoch (eval record)
  int replans = 0;                               // mid-epoch re-plans (eval record)
  int line = 0;                                  // line of its eval record
  trace::Eval eval;                              // its eval record
  std::vector<trace::TimingRecord> timings;      // the agent's timing records of it, if any
  std::vector<trace::CpuRecord> cpu;             // the agent's cpu records of it, if any
};

struct Trace {
  std::string path;
  Header header;
  std::vector<EpochRecords> epochs;   // finished epochs, consecutive
  std::vector<std::string> warnings;  // skipped lines and records, one line each
};

struct ReadOptions {
  bool strict = false;  // a truncated last line is an error instead of a warning
};

// Throws InputError naming the file (and the line) when it cannot be read or is malformed.
Trace read_trace(const std::string& path, const ReadOptions& options = {});
// The same over text already in memory; `name` stands for the file in messages.
Trace parse_trace(std::string_view text, const std::string& name, const ReadOptions& options = {});

// Every disturbance of the trace once, in order of first appearance.
std::vector<trace::Disturbance> slowdowns_of(const Trace& trace);

}  // namespace dbs::replay
