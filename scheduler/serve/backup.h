// Backup and restore of a state directory (docs/guides/scheduler-state.md). A backup is a tar
// archive (archive.h) whose first member, dbs-backup.json, is its manifest:
//   {"format": "dbs-scheduler-backup", "version": kBackupVersion, "journal_version",
//    "files": [{"path", "bytes", "crc32"}]}
// followed by journal.jsonl (whole lines only), the traces of finished jobs (traces/<job>.jsonl)
// and the quarantined files (quarantine/...). It is taken while the daemon runs: the traces of
// jobs that have records in the copied journal are left out, because a daemon starting on the
// restored directory rewrites them from the journal, so traces and journal always agree.
#pragma once

#include <string>

namespace dbs::scheduler {

constexpr int kBackupVersion = 1;

struct BackupSummary {
  std::size_t records = 0;      // journal records copied
  std::size_t traces = 0;       // finished jobs' traces copied
  std::size_t quarantined = 0;  // quarantined files copied
  std::size_t rewritten = 0;    // jobs whose traces a daemon rewrites from the journal
  int journal_version = 0;
};

// Writes the backup of state directory `dir` to `out` atomically. Throws ConfigError for a
// missing directory or a journal of a newer format, InputError when a file cannot be read or
// written.
BackupSummary backup_state(const std::string& dir, const std::string& out);

// Restores backup `archive` into `dir`, which must not exist or be empty: the whole archive is
// checked first (format, versions, sizes, checksums, names), then written to a directory beside
// `dir` and renamed to it. On any error nothing is changed. Throws ConfigError (a refusal) or
// InputError (a damaged archive, a write failure), naming the file.
BackupSummary restore_state(const std::string& archive, const std::string& dir);

}  // namespace dbs::scheduler
