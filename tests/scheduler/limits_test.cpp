// The daemon's resource limits (issue 10, "Found" 5 and 8): worlds, the journal while running,
// HTTP connections and bodies.
#include <doctest/doctest.h>

#include <fstream>
#include <memory>
#include <vector>

#include "tests/scheduler/harness.h"

namespace {

using namespace dbs;
using namespace dbs::test;
using proto::ErrorCode;

std::string http_get(std::uint16_t port, const std::string& path, double seconds = 5) {
  SocketClient c(port);
  c.send("GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  std::string all;
  while (const auto l = c.line(seconds)) all += *l + "\n";
  return all;
}

std::string body_of(const std::string& response) {
  const auto at = response.find("\r\n\r\n");
  return at == std::string::npos ? "" : response.substr(at + 4);
}

int lines_of(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  int n = 0;
  while (std::getline(f, line)) ++n;
  return n;
}

}  // namespace

TEST_CASE("Limits.WorldOverMaxWorldIsRefused") {
  TestDaemon daemon(test_options());
  SocketClient c(daemon.port());
  Settings config = job_config(65537);
  c.send(proto::encode(proto::RegisterMsg{"huge", "", 0, 65537, "h", config, "", ""}));
  CHECK(c.line() == error_line(ErrorCode::limit,
                               "a job of 65537 ranks is over this daemon's limit of 65536 "
                               "(--max-world)"));
}

TEST_CASE("Limits.JournalCompactsWhileRunning") {
  TempDir dir;
  auto o = test_options();
  o.state_dir = dir.path() + "/state";
  const std::string journal = o.state_dir + "/journal.jsonl";
  {
    TestDaemon daemon(o);
    Agent keep(daemon.port(), "keep", 0, 1);
    REQUIRE(keep.join());
    keep.report(0, 128, 1000);
    REQUIRE(keep.plan());
    for (int i = 0; i < scheduler::JobTable::kCompactEvery + 3; ++i) {
      Agent a(daemon.port(), "f" + std::to_string(i), 0, 1);
      REQUIRE(a.join());
      a.client().send(proto::encode(proto::GoodbyeMsg{true}));
      REQUIRE(a.client().line());
    }
    // Without compaction: 2 records of "keep" and 2 per finished job.
    int lines = 0;
    for (int i = 0; i < 50; ++i) {
      lines = lines_of(journal);
      if (lines <= 9) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    CHECK(lines <= 9);  // the header, "keep" and the jobs finished since the compaction
    keep.report(1, 128, 1000);  // the journal still takes records after it was replaced
    REQUIRE(keep.plan());
  }
  TestDaemon again(o);
  Agent keep(again.port(), "keep", 0, 1);
  const auto answer = keep.join();
  REQUIRE(answer);
  CHECK(answer->find(R"("epoch":3)") != std::string::npos);  // restored after two epochs
}

TEST_CASE("Limits.IdleHttpConnectionsCannotBlockMetrics") {
  TestDaemon daemon(test_options());
  std::vector<std::unique_ptr<SocketClient>> idle;
  for (int i = 0; i < 64; ++i) idle.push_back(std::make_unique<SocketClient>(daemon.http_port()));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // all accepted
  const auto t0 = std::chrono::steady_clock::now();
  const std::string metrics = http_get(daemon.http_port(), "/metrics", 1);
  CHECK(metrics.find("HTTP/1.1 200 OK\r\n") == 0);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(1));
}

TEST_CASE("Limits.StatusOfALargeJobIsBounded") {
  TestDaemon daemon(test_options());
  Agent a(daemon.port(), "wide", 0, 65536);
  REQUIRE(a.join(job_config(65536)));
  const auto status = nlohmann::json::parse(body_of(http_get(daemon.http_port(), "/status")));
  REQUIRE(status["jobs"].size() == 1);
  const auto& job = status["jobs"][0];
  CHECK(job["world"] == 65536);
  CHECK(job["ranks_shown"] == 256);
  CHECK(job["ranks"].size() == 256);
  CHECK(job["plan"]["batch"].size() == 256);
  const std::string metrics = body_of(http_get(daemon.http_port(), "/metrics"));
  CHECK(metrics.size() < 100000);
}
