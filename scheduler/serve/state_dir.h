// The daemon's state directory (docs/guides/scheduler-state.md):
//   DIR/journal.jsonl        the journal (lib/trace style JSONL; records below), synced per epoch
//   DIR/traces/<job>.jsonl   each job's trace (format dbs-trace, see traces/README.md)
//   DIR/quarantine/          journal lines and traces of jobs that could not be restored
// The journal's first line is its header, {"format": "dbs-journal", "version": kJournalVersion};
// a journal without one is version 0 (the daemon before versions), read and migrated as is.
// Journal records, one JSON object per line after the header, each with "type" and "job":
//   job       {"world", "config", "initial": plan, "owner": uid} - the job was created; "owner"
//             is the uid of the munge credential that created it, absent when the token did
//             (or the journal predates owners): the admin's job (caller.h)
//   epoch     {"epoch", "reports": [report + "host"], "missing": [ranks], "plan", "state"}
//             - the plan of epoch+1 made from epoch's reports, and the policy state after it
//   stopped   {"epoch"} - a rank said goodbye without done (its agents stopped, can resume)
//   running   {"epoch"} - a rank of a stopped job registered again
//   finished  {} - every rank said goodbye with done
//   pruned    {} - the finished job's trace was removed by the retention (retention.h)
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

constexpr int kJournalVersion = 1;  // the format this daemon reads and writes

// The header line of a journal of kJournalVersion, ending in '\n'.
std::string journal_header();

// The format version of DIR/journal.jsonl, reading its first line only and changing nothing:
// 0 when it has no header (or there is no journal). Throws ConfigError naming the file when the
// header is malformed or the version is newer than kJournalVersion.
int journal_version(const std::string& dir);

// Brings DIR/journal.jsonl to kJournalVersion and returns the version it had. From version 0:
// the journal is copied to DIR/journal.v0.jsonl (synced), replaced atomically by the header and
// the same lines, the directory synced, and only then the copy removed (rewrite_journal
// migrates the same way). A copy left by a migration cut short is removed once the journal is
// of kJournalVersion. Throws ConfigError as journal_version, InputError when a file cannot be
// written.
int migrate_journal(const std::string& dir);

// Creates DIR (mode 0700) and DIR/traces when missing. Throws ConfigError.
void prepare_state_dir(const std::string& dir);

// The records of DIR/journal.jsonl (none when it does not exist), its header left out. A last line
// without its newline - a write cut short by a crash - is dropped and the file truncated to the
// last whole line. Lines that are not journal records (not JSON, no "type" or "job" string) go to
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
// record (so those of running jobs, and of a job id created again after it finished), in order,
// but no "pruned" record.
std::vector<bool> still_running(const std::vector<JournalRecord>& records);

// Replaces DIR/journal.jsonl by the header and these lines atomically (compaction), migrating
// a journal of version 0 as migrate_journal does.
void rewrite_journal(const std::string& dir, const std::vector<std::string>& lines);

// Replaces DIR/traces/<job>.jsonl atomically; keep_time: with the old file's modification time
// (the retention's clock, retention.h), when there was one.
void write_trace(const std::string& dir, const std::string& job, const std::string& text,
                 bool keep_time = false);

}  // namespace dbs::scheduler
