// The daemon in-process for tests: started on 127.0.0.1 with ephemeral ports on its own
// thread, stopped at the end of the scope; and an agent speaking the protocol over a
// SocketClient.
#pragma once

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "lib/common/log.h"
#include "lib/replay/reader.h"
#include "lib/proto/codec.h"
#include "lib/proto/share.h"
#include "scheduler/serve/daemon.h"
#include "tests/net/socket_client.h"

namespace dbs::test {

// Options for a test daemon: quick limits, loopback, no signals.
inline scheduler::ServeOptions test_options() {
  scheduler::ServeOptions o;
  o.listen = "127.0.0.1:0";
  o.http = "127.0.0.1:0";
  o.report_timeout_s = 30;
  o.hello_timeout_s = 5;
  o.line_timeout_s = 0.3;
  o.handle_signals = false;
  o.log_level = "error";
  o.http_trust_loopback = true;  // the tests read job ids over loopback without the token
  return o;
}

class TestDaemon {
 public:
  explicit TestDaemon(const scheduler::ServeOptions& o)
      : quiet_((log::set_level(log::Level::error), true)),
        daemon_(o),
        thread_([this] { status_ = daemon_.run(); }) {}
  ~TestDaemon() { stop(); }
  int stop() {
    if (thread_.joinable()) {
      daemon_.stop();
      thread_.join();
    }
    return status_;
  }
  std::uint16_t port() const { return daemon_.agent_endpoint().port(); }
  std::uint16_t http_port() const { return daemon_.http_endpoint()->port(); }
  // The daemon's jobs: read only before agents connect (the io thread owns them).
  const scheduler::JobTable& jobs() const { return daemon_.jobs(); }

 private:
  bool quiet_;
  scheduler::Daemon daemon_;
  int status_ = -1;
  std::thread thread_;
};

// A fresh private directory under /tmp, removed at the end of the scope.
class TempDir {
 public:
  TempDir() {
    char name[] = "/tmp/dbs-sched-test.XXXXXX";
    path_ = ::mkdtemp(name);
  }
  ~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  const std::string& path() const { return path_; }
  // Writes a file with the given mode; returns its path.
  std::string file(const std::string& name, const std::string& text, mode_t mode = 0600) const {
    const std::string p = path_ + "/" + name;
    std::ofstream(p) << text;
    ::chmod(p.c_str(), mode);
    return p;
  }

 private:
  std::string path_;
};

inline Settings job_config(int global_batch = 128) {
  Settings c;
  c.global_batch = global_batch;
  c.samples_per_epoch = 1280;
  return c;
}

// One rank of a job, speaking the protocol.
class Agent {
 public:
  Agent(std::uint16_t port, std::string job, int rank, int world, std::string token = "")
      : client_(port), job_(std::move(job)), rank_(rank), world_(world), token_(std::move(token)) {}

  // Registers; returns the daemon's answer (a plan, or an error line).
  std::optional<std::string> join(const Settings& config = job_config()) {
    client_.send(proto::encode(proto::RegisterMsg{
        job_, token_, rank_, world_, "host" + std::to_string(rank_), config, waiting, ""}));
    return client_.line();
  }
  // Reports epoch (0-based) having run 10 steps with `batch` at `speed` samples/s, `comm_s`
  // seconds in the exchange.
  void report(std::int64_t epoch, int batch, double speed, double comm_s = 0.01) {
    Report r;
    r.rank = rank_;
    r.epoch = epoch;
    r.batch = batch;
    r.samples = 10L * batch;
    r.steps = 10;
    r.compute_s = static_cast<double>(r.samples) / speed;
    r.comm_s = comm_s;
    client_.send(proto::encode(proto::ReportMsg{job_, r}));
  }
  // This rank's share of the next plan the daemon sends (nothing on error, close or timeout).
  std::optional<proto::PlanMsg> plan(double seconds = 5) {
    const auto line = client_.line(seconds);
    if (!line) return std::nullopt;
    const proto::Message m = proto::decode(*line);
    if (const auto* p = std::get_if<proto::PlanMsg>(&m)) return *p;
    last_error_ = *line;
    return std::nullopt;
  }
  SocketClient& client() { return client_; }
  const std::string& last_error() const { return last_error_; }
  std::string waiting;  // what join() says of how the rank waits ("" = not said)

 private:
  SocketClient client_;
  std::string job_;
  int rank_, world_;
  std::string token_, last_error_;
};

// The plan the ranks rebuild from their shares (by rank), as the agents do; fails the test
// unless the shares are of one plan.
inline Plan joined(const std::vector<proto::PlanMsg>& shares) {
  std::vector<proto::Share> all;
  for (const auto& s : shares) all.push_back(proto::share_of(s));
  std::string why;
  const std::optional<Plan> p = proto::assemble(shares.at(0), all, why);
  REQUIRE_MESSAGE(p, why);
  return *p;
}

// GET path from the daemon's HTTP port; returns the whole response (head and body).
inline std::string http_fetch(std::uint16_t port, const std::string& path) {
  SocketClient c(port);
  c.send("GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  std::string all;
  while (const auto l = c.line()) all += *l + "\n";
  return all;
}

// The body of an HTTP response.
inline std::string http_body(const std::string& response) {
  const auto at = response.find("\r\n\r\n");
  return at == std::string::npos ? "" : response.substr(at + 4);
}

// The error line the daemon sends for `code` and `message`, without the newline.
inline std::string error_line(proto::ErrorCode code, const std::string& message) {
  std::string l = proto::encode_error(code, message);
  l.pop_back();
  return l;
}

}  // namespace dbs::test
