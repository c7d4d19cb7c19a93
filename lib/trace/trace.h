// Trace files: versioned JSONL (format in traces/README.md). The first line is a header naming
// the format, its version and the run's configuration; every later line is one record with a
// "type": rank, plan, eval or disturbance. Epochs in traces count from 1 (the structs in memory
// count from 0).
#pragma once

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "lib/policy/plan.h"

namespace dbs::trace {

inline constexpr const char* kFormat = "dbs-trace";
inline constexpr int kVersion = 1;

nlohmann::json header(const nlohmann::json& config);
// A plan record for `plan.epoch`; step > 0 marks a re-plan inside the epoch.
nlohmann::json plan_record(const policy::Plan& plan, std::int64_t step, const std::string& source);
nlohmann::json rank_record(const policy::Report& report, const std::string& host);
policy::Plan plan_from_record(const nlohmann::json& record);    // throws InputError
policy::Report report_from_record(const nlohmann::json& record);

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
