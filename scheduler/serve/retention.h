// How long the state directory keeps what is done with: the traces of finished jobs and the
// files of quarantined ones (docs/guides/scheduler-state.md). A finished job is kept while it is
// among the keep_finished newest and finished less than retention_s ago; a quarantined file
// while it is younger than retention_s. Ages count from the file's last change (a trace's last
// line is its job's end). Pure bookkeeping on the io thread: the caller removes what due() names.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace dbs::scheduler {

struct RetentionLimits {
  std::size_t keep_finished = 0;  // finished jobs kept, newest first; 0 = no limit
  double retention_s = 0;  // seconds a finished trace or quarantined file is kept; 0 = forever
};

class Retention {
 public:
  using Time = std::chrono::system_clock::time_point;
  explicit Retention(const RetentionLimits& limits) : limits_(limits) {}

  // Lists DIR/traces (the traces of jobs not in `unfinished` are finished) and DIR/quarantine.
  // Throws InputError when a directory cannot be read.
  void scan(const std::string& dir, const std::set<std::string>& unfinished);
  void finished(const std::string& job, Time when);  // the job's trace is complete
  void reopened(const std::string& job);  // the id was created again: its trace is running
  // Removes the quarantined files past the retention (when scanned) and returns the finished
  // jobs whose traces go now, oldest first, forgetting them.
  std::vector<std::string> due(Time now);

  const RetentionLimits& limits() const { return limits_; }
  // {"keep_finished", "retention_s" (null: no limit), "finished_kept", "quarantined_kept",
  //  "pruned_finished", "pruned_quarantined"} for /status.
  nlohmann::json to_json() const;

 private:
  struct Kept {
    std::string name;  // job id, or the quarantined file's path
    Time when;
  };
  bool expired(const Kept& k, Time now) const;

  RetentionLimits limits_;
  std::deque<Kept> finished_;     // oldest first
  std::deque<Kept> quarantined_;  // oldest first
  std::uint64_t pruned_finished_ = 0, pruned_quarantined_ = 0;
};

}  // namespace dbs::scheduler
