// The daemon's append-only journal, DIR/journal.jsonl, with group commit: the io thread
// appends records, a writer thread writes everything queued in one write(), syncs it
// (fdatasync), appends the matching trace lines to DIR/traces/<job>.jsonl, and only then runs
// the records' callbacks on the io thread (which send the plans). So no agent ever sees a plan
// that a crash could lose, and one sync covers every epoch planned meanwhile.
// Without a directory the journal is off and callbacks run at once.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "lib/net/asio.h"
#include "scheduler/serve/histogram.h"

namespace dbs::scheduler {

class Journal {
 public:
  struct Entry {
    std::string line;            // the journal record, one line ending in '\n'
    std::string job;             // whose trace the lines below go to ("" = none)
    std::string trace;           // trace lines
    bool new_trace = false;      // start the trace file afresh
    bool end_trace = false;      // the job finished: close its trace file
    bool compact = false;        // after this batch, drop the records of finished jobs
    bool remove_trace = false;   // remove the job's trace (retention); line stays empty
    std::function<void()> done;  // runs on the io thread once the record is durable
    // Fill line (before the write) and trace (after the sync, while the io thread already
    // sends the plans) on the writer thread, so that encoding costs the io thread nothing.
    std::function<void(Entry&)> render_line, render_trace;
  };

  // dir empty: journal off. on_failure runs on the io thread if a write or sync fails.
  Journal(const std::string& dir, net::asio::io_context& io,
          std::function<void(const std::string&)> on_failure);
  // Opens DIR/journal.jsonl for appending (writing the header first when it is new) and starts
  // the writer (after recovery has rewritten the file). Throws ConfigError.
  void start();
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  void append(Entry entry);
  // Writes and syncs what is queued, then ends the writer; later entries are dropped.
  void stop();
  bool enabled() const { return !dir_.empty(); }
  std::uint64_t syncs() const;     // fdatasync calls so far
  Histogram sync_seconds() const;  // seconds per write + fdatasync of a batch, a copy
  std::uint64_t trace_failures() const { return trace_failures_; }  // trace writes lost
  std::uint64_t compactions() const { return compactions_; }

 private:
  void run();
  // Rewrites the journal without the records of finished jobs (state_dir.h, still_running)
  // and reopens it; on failure the journal stays as it was. Writer thread only.
  void compact();
  // Appends e's trace lines to its job's trace (opening it as needed); never throws.
  void write_trace_lines(std::map<std::string, std::FILE*>& traces, const Entry& e);

  std::string dir_;
  net::asio::io_context& io_;
  std::function<void(const std::string&)> on_failure_;
  int fd_ = -1;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Entry> queue_;
  bool stopping_ = false, failed_ = false;
  std::uint64_t syncs_ = 0;
  Histogram sync_seconds_{journal_sync_buckets()};
  std::atomic<std::uint64_t> trace_failures_{0}, compactions_{0};
  std::thread writer_;
};

}  // namespace dbs::scheduler
