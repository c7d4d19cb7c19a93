// dbs-scheduler serve: the daemon (the "main" of Asio's HTTP server example). One io_context
// thread runs the agent listener, the sessions, the jobs, the HTTP server and the signals; the
// journal has its own writer thread, and munge credentials are decoded on a thread of their own
// (agent_handler.h). Construct (binds, restores the state directory), then run() until
// SIGINT/SIGTERM or stop().
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "lib/net/asio.h"
#include "lib/net/listener.h"
#include "lib/net/session_manager.h"
#include "lib/net/tls.h"
#include "scheduler/serve/agent_handler.h"
#include "scheduler/serve/http.h"
#include "scheduler/serve/jobs.h"
#include "scheduler/serve/journal.h"
#include "scheduler/serve/options.h"
#include "scheduler/serve/views.h"

namespace dbs::scheduler {

class Daemon {
 public:
  // Throws ConfigError (bad options, token file, address in use) or InputError (journal).
  explicit Daemon(const ServeOptions& options);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  int run();    // returns the exit status: 0 after a clean stop, 1 after a journal failure
  void stop();  // from any thread

  net::tcp::endpoint agent_endpoint() const { return agent_endpoint_; }
  std::optional<net::tcp::endpoint> http_endpoint() const { return http_endpoint_; }
  Stats stats() const;  // io thread only (or after run() returned)
  const JobTable& jobs() const { return jobs_; }

 private:
  void accept(net::tcp::socket socket);
  HttpResponse route(const HttpRequest& request);
  void shutdown();
  void write_ready_file() const;
  void reserve_descriptors();  // raises the open-file limit, sets max_connections_

  ServeOptions options_;
  net::asio::io_context io_{1};
  net::asio::signal_set signals_{io_};
  AuthSettings auth_;
  net::TlsContext tls_;  // null: both ports plain
  Journal journal_;
  JobTable jobs_;
  AgentHandler handler_;
  net::SessionManager sessions_;
  std::unique_ptr<net::Listener> listener_;
  std::unique_ptr<HttpServer> http_;
  net::tcp::endpoint agent_endpoint_;
  std::optional<net::tcp::endpoint> http_endpoint_;
  net::Clock::time_point started_ = net::Clock::now();
  std::size_t max_connections_ = options_.max_connections;  // what the descriptors allow
  std::uint64_t refused_ = 0;                               // connections over the limit
  int status_ = 0;
  std::atomic<bool> stopping_{false};
};

}  // namespace dbs::scheduler
