#include "scheduler/serve/journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>

#include "lib/common/error.h"
#include "lib/common/log.h"
#include "scheduler/serve/state_dir.h"

namespace dbs::scheduler {
namespace {

bool write_all(int fd, const std::string& bytes) {
  std::size_t at = 0;
  while (at < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + at, bytes.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    at += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

Journal::Journal(const std::string& dir, net::asio::io_context& io,
                 std::function<void(const std::string&)> on_failure)
    : dir_(dir), io_(io), on_failure_(std::move(on_failure)) {}

void Journal::start() {
  if (dir_.empty()) return;
  const std::string path = dir_ + "/journal.jsonl";
  fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd_ < 0) throw ConfigError(path + ": cannot open the journal: " + std::strerror(errno));
  if (::lseek(fd_, 0, SEEK_END) == 0 &&  // a new journal starts with its header
      (!write_all(fd_, journal_header()) || ::fdatasync(fd_) != 0))
    throw ConfigError(path + ": cannot write the journal header: " + std::strerror(errno));
  writer_ = std::thread([this] { run(); });
}

Journal::~Journal() {
  stop();
  if (fd_ >= 0) ::close(fd_);
}

void Journal::append(Entry entry) {
  if (dir_.empty()) {
    if (entry.done) net::asio::post(io_, std::move(entry.done));
    return;
  }
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    queue_.push_back(std::move(entry));
  }
  wake_.notify_one();
}

void Journal::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  wake_.notify_one();
  if (writer_.joinable()) writer_.join();
}

std::uint64_t Journal::syncs() const {
  std::lock_guard lock(mutex_);
  return syncs_;
}

Histogram Journal::sync_seconds() const {
  std::lock_guard lock(mutex_);
  return sync_seconds_;
}

void Journal::run() {
  std::map<std::string, std::FILE*> traces;
  std::vector<Entry> batch;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) break;  // stopping with nothing left
      batch.swap(queue_);
    }
    std::string lines;
    for (auto& e : batch) {
      if (e.render_line) e.render_line(e);
      lines += e.line;
    }
    const auto started = std::chrono::steady_clock::now();
    bool ok = !failed_ && (lines.empty() || (write_all(fd_, lines) && ::fdatasync(fd_) == 0));
    std::string error = ok ? "" : dir_ + "/journal.jsonl: " + std::strerror(errno);
    if (ok && !lines.empty()) {
      const std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
      std::lock_guard lock(mutex_);
      ++syncs_;
      sync_seconds_.observe(took.count());
    }
    if (ok) {  // durable: the plans may go
      std::vector<std::function<void()>> done;
      for (auto& e : batch)
        if (e.done) done.push_back(std::move(e.done));
      if (!done.empty())
        net::asio::post(io_, [done = std::move(done)] {
          for (const auto& f : done) f();
        });
    }
    // Traces follow the journal: recovery rewrites them from it, so they need no sync, and a
    // trace that cannot be written (no descriptor left, traces/ removed) only loses lines until
    // the next restart: logged, that trace is skipped, the daemon goes on.
    for (auto& e : batch) {
      if (!ok || e.job.empty()) continue;
      if (e.render_trace) e.render_trace(e);
      write_trace_lines(traces, e);
    }
    if (ok && std::any_of(batch.begin(), batch.end(), [](const Entry& e) { return e.compact; }))
      compact();
    if (!ok && !failed_) {
      failed_ = true;
      log::error("journal: " + error);
      net::asio::post(io_, [this, error] { on_failure_(error); });
    }
    batch.clear();
  }
  for (auto& [job, f] : traces)
    if (f != nullptr) std::fclose(f);
}

void Journal::compact() {
  const std::string path = dir_ + "/journal.jsonl";
  try {
    const std::vector<JournalRecord> records = read_journal(dir_);
    const std::vector<bool> keep = still_running(records);
    std::vector<std::string> lines;
    for (std::size_t i = 0; i < records.size(); ++i)
      if (keep[i]) lines.push_back(records[i].text);
    if (lines.size() == records.size()) return;
    rewrite_journal(dir_, lines);
    const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0) throw InputError(path + ": cannot reopen: " + std::strerror(errno));
    ::close(fd_);
    fd_ = fd;
    ++compactions_;
    log::info("journal compacted: " + std::to_string(records.size() - lines.size()) +
              " records of finished jobs dropped, " + std::to_string(lines.size()) + " kept");
  } catch (const Error& e) {
    log::warn(std::string("journal not compacted: ") + e.what());
  }
}

void Journal::write_trace_lines(std::map<std::string, std::FILE*>& traces, const Entry& e) {
  const std::string path = dir_ + "/traces/" + e.job + ".jsonl";
  const auto it = traces.find(e.job);
  std::FILE* f = it == traces.end() ? nullptr : it->second;
  const bool broken = it != traces.end() && f == nullptr;  // failed before: wait for a restart
  if (!e.remove_trace && (e.new_trace || (f == nullptr && !broken))) {
    if (f != nullptr) std::fclose(f);
    f = std::fopen(path.c_str(), e.new_trace ? "w" : "a");
    traces[e.job] = f;
    if (f == nullptr) {
      ++trace_failures_;
      log::error("trace " + path + ": " + std::strerror(errno) +
                 "; its lines are skipped until a restart rewrites it from the journal");
    }
  }
  if (f != nullptr && (std::fwrite(e.trace.data(), 1, e.trace.size(), f) != e.trace.size() ||
                       std::fflush(f) != 0)) {
    ++trace_failures_;
    log::error("trace " + path + ": " + std::strerror(errno) +
               "; its lines are skipped until a restart rewrites it from the journal");
    std::fclose(f);
    traces[e.job] = f = nullptr;
  }
  if (e.end_trace || e.remove_trace) {
    if (f != nullptr) std::fclose(f);
    traces.erase(e.job);
  }
  if (e.remove_trace && ::unlink(path.c_str()) != 0 && errno != ENOENT)
    log::warn("trace " + path + ": cannot remove: " + std::strerror(errno));
}

}  // namespace dbs::scheduler
