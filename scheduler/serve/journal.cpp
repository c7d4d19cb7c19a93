#include "scheduler/serve/journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include "lib/common/error.h"
#include "lib/common/log.h"

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
    bool ok = !failed_ && write_all(fd_, lines) && ::fdatasync(fd_) == 0;
    std::string error = ok ? "" : dir_ + "/journal.jsonl: " + std::strerror(errno);
    if (ok) {
      std::lock_guard lock(mutex_);
      ++syncs_;
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
    // Traces follow the journal: recovery rewrites them from it, so they need no sync.
    for (auto& e : batch) {
      if (!ok || e.job.empty()) continue;
      if (e.render_trace) e.render_trace(e);
      std::FILE*& f = traces[e.job];
      if (f == nullptr || e.new_trace) {
        if (f != nullptr) std::fclose(f);
        const std::string path = dir_ + "/traces/" + e.job + ".jsonl";
        f = std::fopen(path.c_str(), e.new_trace ? "w" : "a");
        if (f == nullptr) {
          ok = false;
          error = path + ": " + std::strerror(errno);
          continue;
        }
      }
      if (std::fwrite(e.trace.data(), 1, e.trace.size(), f) != e.trace.size() ||
          std::fflush(f) != 0) {
        ok = false;
        error = dir_ + "/traces/" + e.job + ".jsonl: " + std::strerror(errno);
      }
      if (e.end_trace) {
        std::fclose(f);
        traces.erase(e.job);
      }
    }
    if (!ok && !failed_) {
      failed_ = true;
      log::error("journal: " + error);
      net::asio::post(io_, [this, error] { on_failure_(error); });
    }
    batch.clear();
  }
  for (auto& [job, f] : traces) std::fclose(f);
}

}  // namespace dbs::scheduler
