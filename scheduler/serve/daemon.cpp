#include "scheduler/serve/daemon.h"

#include <unistd.h>

#include <csignal>

#include "lib/auth/credential.h"
#include "lib/common/atomic_file.h"
#include "lib/common/error.h"
#include "lib/common/log.h"
#include "lib/net/address.h"
#include "lib/net/fd_limit.h"
#include "lib/net/token.h"
#include "lib/proto/checks.h"
#include "lib/proto/codec.h"
#include "scheduler/serve/state_dir.h"

namespace dbs::scheduler {
namespace {

net::SessionLimits limits_of(const ServeOptions& o) {
  net::SessionLimits l;
  l.max_message = o.max_message;
  l.hello_max_message = std::min<std::size_t>(o.max_message, 64 * 1024);
  l.hello_s = o.hello_timeout_s;
  l.line_s = o.line_timeout_s;
  l.max_queued_total = o.max_queued;
  l.max_queued = std::min(l.max_queued, o.max_queued);
  return l;
}

AuthSettings auth_of(const ServeOptions& o) {
  AuthSettings a;
  a.token = o.token_file.empty() ? "" : net::read_token_file(o.token_file);
  a.token_mode = o.auth.find("token") != std::string::npos;
  a.munge = o.auth.find("munge") != std::string::npos;
  a.munge_socket = o.munge_socket;
  if (a.munge && !auth::munge_built())
    throw ConfigError("--auth " + o.auth +
                      ": munge is not built into this dbs-scheduler "
                      "(install libmunge-dev and configure with -Dmunge=enabled)");
  return a;
}

net::TlsContext tls_of(const ServeOptions& o) {
  if (o.tls_cert.empty() && o.tls_key.empty()) return nullptr;
  return net::server_context(o.tls_cert, o.tls_key);
}

void check_options(const ServeOptions& o) {
  const auto positive = [](double v, const char* name) {
    if (!(v > 0)) throw ConfigError(std::string(name) + " must be > 0");
  };
  positive(o.report_timeout_s, "--report-timeout");
  positive(o.abandon_after_s, "--abandon-after");
  positive(o.lost_after_s, "--lost-after");
  positive(o.idle_timeout_s, "--idle-timeout");
  positive(o.hello_timeout_s, "--hello-timeout");
  positive(o.line_timeout_s, "--line-timeout");
  if (o.max_connections == 0) throw ConfigError("--max-connections must be > 0");
  if (o.max_jobs == 0) throw ConfigError("--max-jobs must be > 0");
  if (o.max_message < 1024) throw ConfigError("--max-message must be >= 1024");
  if (o.max_world < 1 || o.max_world > proto::kMaxWorld)
    throw ConfigError("--max-world must be in [1, " + std::to_string(proto::kMaxWorld) + "]");
  if (o.max_queued < (1u << 20)) throw ConfigError("--max-queued must be >= 1048576");
}

// The endpoint for `text`; without a token only loopback addresses are allowed.
net::tcp::endpoint endpoint_of(net::asio::io_context& io, const std::string& text,
                               const std::string& what, bool authenticated) {
  const auto e = net::resolve_listen(io, net::parse_host_port(text, what), what);
  if (!authenticated && !net::is_loopback(e.address()))
    throw ConfigError(what + " " + text + " is not a loopback address; without --token-file " +
                      "(or DBS_TOKEN_FILE) or --auth munge the daemon listens on loopback only");
  return e;
}

}  // namespace

Daemon::Daemon(const ServeOptions& options)
    : options_((check_options(options), options)),
      auth_(auth_of(options_)),
      tls_(tls_of(options_)),
      journal_(options_.state_dir, io_,
               [this](const std::string&) {
                 status_ = 1;
                 stop();
               }),
      jobs_(io_, journal_,
            {options_.report_timeout_s,
             options_.max_jobs,
             options_.abandon_after_s,
             options_.max_world,
             options_.lost_after_s,
             {options_.keep_finished, options_.retention_s}}),
      handler_(io_, jobs_, auth_, options_.idle_timeout_s),
      sessions_(io_, limits_of(options_), 0.25, tls_.get()) {
  const auto agents = endpoint_of(io_, options_.listen, "--listen", auth_.any());
  std::optional<net::tcp::endpoint> http;
  if (!options_.http.empty()) http = endpoint_of(io_, options_.http, "--http", auth_.any());
  reserve_descriptors();
  if (!options_.state_dir.empty()) {
    journal_version(options_.state_dir);  // a newer journal is refused before any change
    prepare_state_dir(options_.state_dir);
    // Restored as written (the line numbers of its messages are the file's), then migrated.
    jobs_.restore(options_.state_dir);
    migrate_journal(options_.state_dir);
    journal_.start();
  }
  jobs_.start_sweeps();
  listener_ = std::make_unique<net::Listener>(io_, agents, "--listen",
                                              [this](net::tcp::socket s) { accept(std::move(s)); });
  agent_endpoint_ = listener_->local_endpoint();
  if (http) {
    http_ = std::make_unique<HttpServer>(
        io_, *http, [this](const HttpRequest& r) { return route(r); }, tls_.get());
    http_endpoint_ = http_->local_endpoint();
  }
  if (options_.handle_signals) {
    signals_.add(SIGINT);
    signals_.add(SIGTERM);
    signals_.async_wait([this](const net::error_code& ec, int signal) {
      if (ec) return;  // operation_aborted: stopping anyway
      log::info(std::string("signal ") + (signal == SIGINT ? "SIGINT" : "SIGTERM") + ": stopping");
      shutdown();
    });
  }
  write_ready_file();
  log::info(
      "listening for agents on " + net::to_string(agent_endpoint_) +
      (http_endpoint_ ? ", HTTP on " + net::to_string(*http_endpoint_) : "") +
      (tls_ ? " over TLS" : "") +
      (!auth_.any()                      ? " (no token: loopback only)"
       : auth_.munge && auth_.token_mode ? " (token or munge credential required)"
       : auth_.munge                     ? " (munge credential required)"
                                         : " (token required)") +
      (options_.state_dir.empty() ? ", state in memory only" : ", state in " + options_.state_dir));
}

void Daemon::reserve_descriptors() {
  // One descriptor per agent connection; the rest are reserved: an open trace per running job,
  // the HTTP connections, and the journal, listeners, signals and state files.
  const std::size_t reserve = options_.max_jobs + kHttpConnections + 64;
  const std::size_t limit = net::raise_fd_limit(options_.max_connections + reserve);
  if (limit == 0) return;  // unknown: keep the options
  max_connections_ = net::connections_within(limit, options_.max_connections, reserve);
  if (max_connections_ == 0)
    throw ConfigError("the open-file limit (" + std::to_string(limit) + ") leaves no room for " +
                      "agent connections after " + std::to_string(reserve) +
                      " reserved descriptors; lower --max-jobs or raise ulimit -n");
  if (max_connections_ < options_.max_connections)
    log::warn("the open-file limit (" + std::to_string(limit) + ") allows " +
              std::to_string(max_connections_) + " agent connections, not --max-connections " +
              std::to_string(options_.max_connections));
}

Daemon::~Daemon() {
  journal_.stop();
}

int Daemon::run() {
  io_.run();
  return status_;
}

void Daemon::stop() {
  net::asio::post(io_, [this] { shutdown(); });
}

void Daemon::shutdown() {
  if (stopping_.exchange(true)) return;
  {
    net::error_code ignored;
    signals_.cancel(ignored);
  }
  listener_->stop();
  if (http_) http_->stop();
  jobs_.stop();
  sessions_.stop_all();
  journal_.stop();  // writes and syncs what is queued
  io_.stop();
  log::info("stopped");
}

void Daemon::accept(net::tcp::socket socket) {
  if (stopping_) return;
  auto session = sessions_.start(std::move(socket), handler_);
  if (sessions_.size() > max_connections_) {
    ++refused_;
    session->fail(proto::ErrorCode::limit,
                  "too many connections (limit " + std::to_string(max_connections_) + ")");
  }
}

Stats Daemon::stats() const {
  Stats s;
  s.uptime_s = std::chrono::duration<double>(net::Clock::now() - started_).count();
  s.connections = sessions_.size();
  s.messages = handler_.messages();
  s.rejected = handler_.rejected();
  s.rejected[static_cast<std::size_t>(proto::ErrorCode::timeout)] += sessions_.timed_out();
  s.rejected[static_cast<std::size_t>(proto::ErrorCode::limit)] += refused_;
  s.refused = refused_;
  s.journal_syncs = journal_.syncs();
  s.journal_sync = journal_.sync_seconds();
  s.plan_latency = jobs_.plan_latency();
  s.report_timeout_s = options_.report_timeout_s;
  s.lost_after_s = options_.lost_after_s;
  return s;
}

HttpResponse Daemon::route(const HttpRequest& r) {
  // Job ids, worlds and hosts only for holders of the daemon token, and loopback clients where
  // the head node's users are not told apart (no munge; docs/concepts/security.md).
  const bool trusted = (r.loopback && options_.http_trust_loopback && !auth_.munge) ||
                       (!auth_.token.empty() && proto::tokens_equal(auth_.token, r.bearer));
  const std::string& path = r.path;
  if (path == "/metrics")
    return {200, "text/plain; version=0.0.4; charset=utf-8",
            render_metrics(jobs_, stats(), trusted)};
  if (path == "/status")
    return {200, "application/json", render_status(jobs_, stats(), trusted).dump(2) + "\n"};
  if (path == "/" || path == "/index.html")
    return {200, "text/html; charset=utf-8",
            trusted ? render_page(jobs_, stats()) : render_public_page(jobs_, stats())};
  return {404, "text/plain; charset=utf-8", "not found: try /, /status or /metrics\n"};
}

void Daemon::write_ready_file() const {
  if (options_.ready_file.empty()) return;
  nlohmann::json j = {{"listen", net::to_string(agent_endpoint_)}, {"pid", ::getpid()}};
  if (http_endpoint_) j["http"] = net::to_string(*http_endpoint_);
  write_file_atomic(options_.ready_file, j.dump() + "\n");
}

}  // namespace dbs::scheduler
