#include "lib/net/session_manager.h"

#include <vector>

namespace dbs::net {

SessionManager::SessionManager(asio::io_context& io, SessionLimits limits, double sweep_s,
                               ssl::context* tls)
    : timer_(io), limits_(limits), sweep_s_(sweep_s), tls_(tls) {
  arm();
}

std::shared_ptr<LineSession> SessionManager::start(tcp::socket socket, SessionHandler& handler) {
  auto s =
      std::make_shared<LineSession>(std::move(socket), tls_, handler, *this, limits_, next_id_++);
  sessions_.emplace(s.get(), s);
  s->start();
  return s;
}

bool SessionManager::reserve_queued(std::size_t n) {
  if (queued_ + n > limits_.max_queued_total) return false;
  queued_ += n;
  return true;
}

void SessionManager::remove(LineSession* session) {
  sessions_.erase(session);
}

void SessionManager::stop_all() {
  stopped_ = true;
  timer_.cancel();
  std::vector<std::shared_ptr<LineSession>> all;
  all.reserve(sessions_.size());
  for (const auto& [p, s] : sessions_) all.push_back(s);
  for (const auto& s : all) s->close();
  sessions_.clear();
}

void SessionManager::arm() {
  timer_.expires_after(
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(sweep_s_)));
  timer_.async_wait([this](const error_code& ec) {
    if (ec || stopped_) return;  // operation_aborted: shutting down
    sweep();
    arm();
  });
}

void SessionManager::sweep() {
  const auto now = Clock::now();
  std::vector<std::pair<std::shared_ptr<LineSession>, std::string>> late;
  std::vector<std::shared_ptr<LineSession>> stuck;
  for (const auto& [p, s] : sessions_) {
    if (s->closing_overdue(now)) {
      stuck.push_back(s);
    } else if (std::string why = s->overdue(now); !why.empty()) {
      late.emplace_back(s, std::move(why));
    }
  }
  for (auto& [s, why] : late) {
    ++timed_out_;
    s->fail(proto::ErrorCode::timeout, why);
  }
  for (const auto& s : stuck) s->close();
}

}  // namespace dbs::net
