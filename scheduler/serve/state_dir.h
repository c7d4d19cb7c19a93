// The daemon's state directory:
//   DIR/journal.jsonl        the journal (lib/trace style JSONL; records below), synced per epoch
//   DIR/traces/<job>.jsonl   each job's trace (format dbs-trace, see traces/README.md)
// Journal records, one JSON object per line, each with "type" and "job":
//   job       {"world", "config", "initial": plan} - the job was created
//   epoch     {"epoch", "reports": [report + "host"], "missing": [ranks], "plan", "state"}
//             - the plan of epoch+1 made from epoch's reports, and the policy state after it
//   stopped   {"epoch"} - a rank said goodbye without done (its agents stopped, can resume)
//   running   {"epoch"} - a rank of a stopped job registered again
//   finished  {} - every rank said goodbye with done
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace dbs::scheduler {

struct JournalRecord {
  std::size_t line = 0;  // 1-based, for messages
  std::string text;      // the line, without '\n'
  nlohmann::json json;
};

// Creates DIR (mode 0700) and DIR/traces when missing. Throws ConfigError.
void prepare_state_dir(const std::string& dir);

// The records of DIR/journal.jsonl (none when it does not exist). A last line without its
// newline - a write cut short by a crash - is dropped and the file truncated to the last whole
// line. Lines that are not journal records (not JSON, no "type" or "job" string) go to
// `unreadable` when given, else InputError names the first one.
std::vector<JournalRecord> read_journal(const std::string& dir,
                                        std::vector<JournalRecord>* unreadable = nullptr);

// Moves a job that cannot be restored aside: its journal lines to
// DIR/quarantine/<job>.<unix time>.journal.jsonl and its trace, if any, to
// DIR/quarantine/<job>.<unix time>.trace.jsonl. Returns the journal copy's path. Throws
// InputError.
std::string quarantine(const std::string& dir, const std::string& job,
                       const std::vector<std::string>& lines);

// Which records a compacted journal keeps: every record after its job's last "finished"
// record (so those of running jobs, and of a job id created again after it finished), in order.
std::vector<bool> still_running(const std::vector<JournalRecord>& records);

// Replaces DIR/journal.jsonl by these lines atomically (compaction).
void rewrite_journal(const std::string& dir, const std::vector<std::string>& lines);

// Replaces DIR/traces/<job>.jsonl atomically.
void write_trace(const std::string& dir, const std::string& job, const std::string& text);

}  // namespace dbs::scheduler
