// Trace files: versioned JSONL (format in traces/README.md). The first line is a header naming
// the format, its version and the run's configuration (the policy Settings, the world size and
// what else the recorder knows); every later line is one record with a "type": rank, plan, eval,
// disturbance (written by the functions below whoever records: the agent, the daemon, replay
// --synthesize), timing or cpu (the agent's; records.h holds those and the eval record's struct).
// Epochs in traces count from 1 (the structs in memory count from 0).
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "lib/policy/plan.h"
#include "lib/trace/disturbance.h"

namespace dbs::trace {

inline constexpr const char* kFormat = "dbs-trace";
// 2: the header's config holds the Settings form (samples_per_epoch; version 1 said
// train_samples). Readers read both.
inline constexpr int kVersion = 2;

// A header's config: `run` (model, hosts, ...: what the recorder knows) with the settings' JSON
// form and world added.
nlohmann::json run_config(const Settings& settings, int world, nlohmann::json run);
nlohmann::json header(const nlohmann::json& config);
// A plan record for `plan.epoch`; step > 0 marks a re-plan inside the epoch.
nlohmann::json plan_record(const Plan& plan, std::int64_t step, const std::string& source);
nlohmann::json rank_record(const Report& report, const std::string& host);
nlohmann::json disturbance_record(const Disturbance& d, std::int64_t epoch);
// The end of an epoch: its training time wall_s and what follows from it for `samples` samples
// computed by ranks of these throughputs: to_json(eval_of(...)).
nlohmann::json eval_record(std::int64_t epoch, double wall_s, double samples,
                           std::span<const double> throughput, int replans);

// Appends records to a trace file, one JSON object per line. Lines are written whole; flush()
// makes them durable (called once per epoch).
class Writer {
 public:
  // append: continue an existing trace (resume) instead of starting it with `head`.
  Writer(const std::string& path, const nlohmann::json& head, bool append);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;
  void write(const nlohmann::json& record);
  void flush();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

}  // namespace dbs::trace
