// Owns the open sessions of a server (the "connection manager" of Asio's HTTP server example):
// starts them, forgets them when they close, closes them all at shutdown, and sweeps them every
// `sweep_s` for the time limits (idle, unfinished line, stuck close). One io_context thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <unordered_map>

#include "lib/net/asio.h"
#include "lib/net/session.h"

namespace dbs::net {

class SessionManager {
 public:
  // tls != nullptr: every session speaks TLS with this context (which must outlive the manager).
  SessionManager(asio::io_context& io, SessionLimits limits, double sweep_s = 0.25,
                 ssl::context* tls = nullptr);
  SessionManager(const SessionManager&) = delete;
  SessionManager& operator=(const SessionManager&) = delete;

  // A new session for an accepted socket, started and tracked.
  std::shared_ptr<LineSession> start(tcp::socket socket, SessionHandler& handler);
  void remove(LineSession* session);
  void stop_all();
  std::size_t size() const { return sessions_.size(); }
  const SessionLimits& limits() const { return limits_; }
  std::uint64_t timed_out() const { return timed_out_; }  // sessions dropped by a time limit
  // Bytes queued for writing over all sessions, bounded by limits().max_queued_total.
  std::size_t queued() const { return queued_; }
  bool reserve_queued(std::size_t n);  // false (nothing reserved) when over the bound
  void release_queued(std::size_t n) { queued_ -= std::min(queued_, n); }

 private:
  void arm();
  void sweep();

  asio::steady_timer timer_;
  SessionLimits limits_;
  double sweep_s_;
  ssl::context* tls_;
  std::unordered_map<LineSession*, std::shared_ptr<LineSession>> sessions_;
  std::uint64_t next_id_ = 1, timed_out_ = 0;
  std::size_t queued_ = 0;
  bool stopped_ = false;
};

}  // namespace dbs::net
