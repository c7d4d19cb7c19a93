// Per-job credentials: the daemon token (the admin) creates and joins any job, a job's key opens
// that job only, and remote HTTP clients without the token see no job ids or hosts.
#include <doctest/doctest.h>

#include "lib/net/job_key.h"
#include "tests/scheduler/harness.h"

namespace {

using namespace dbs;
using namespace dbs::test;
using proto::ErrorCode;

const std::string kToken = "0123456789abcdef-keys-token";

std::string http_get(std::uint16_t port, const std::string& path, const std::string& extra = "") {
  SocketClient c(port);
  c.send("GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + extra + "\r\n");
  std::string all;
  while (const auto l = c.line()) all += *l + "\n";
  return all;
}

}  // namespace

TEST_CASE("Keys.TheDaemonTokenOrTheJobsKeyJoinsAndTakesOver") {
  TempDir dir;
  auto o = test_options();
  o.token_file = dir.file("token", kToken + "\n");
  TestDaemon daemon(o);
  const std::string key = net::job_key(kToken, "k");
  Agent r0(daemon.port(), "k", 0, 2, kToken);  // creates
  REQUIRE(r0.join());
  Agent other(daemon.port(), "k", 1, 2, net::job_key(kToken, "other"));  // another job's key
  CHECK(other.join() == error_line(ErrorCode::auth, "invalid token"));
  r0.client().send("{\"v\":2,\"type\":\"heartbeat\"}\n");  // rank 0 was not kicked
  CHECK(r0.client().line() == R"({"v":2,"type":"heartbeat"})");
  // The token holder is the admin: every rank of a job started with it joins (all or none).
  Agent r1(daemon.port(), "k", 1, 2, kToken);
  const auto plan = r1.join();
  REQUIRE(plan);
  CHECK(plan->find("\"type\":\"plan\"") != std::string::npos);
  Agent r1_key(daemon.port(), "k", 1, 2, key);
  REQUIRE(r1_key.join().value_or("").find("\"type\":\"plan\"") != std::string::npos);
  Agent again(daemon.port(), "k", 0, 2, key);  // the key takes the rank over (a reconnect)
  REQUIRE(again.join());
  CHECK(r0.client().line() ==
        error_line(ErrorCode::conflict, "replaced by a newer connection of rank 0 of job 'k'"));
  Agent fresh(daemon.port(), "fresh", 0, 1, net::job_key(kToken, "fresh"));  // a key creates too
  CHECK(fresh.join(job_config()).value_or("").find("\"type\":\"plan\"") != std::string::npos);
}

TEST_CASE("Keys.RemoteHttpClientsWithoutTheTokenSeeNoJobs") {
  TempDir dir;
  auto o = test_options();
  o.token_file = dir.file("token", kToken + "\n");
  o.http_trust_loopback = false;  // the test's loopback client stands for a remote one
  TestDaemon daemon(o);
  Agent a(daemon.port(), "secret-job", 0, 1, kToken);
  REQUIRE(a.join());
  for (const char* path : {"/status", "/", "/metrics"}) {
    CAPTURE(path);
    const std::string hidden = http_get(daemon.http_port(), path);
    CHECK(hidden.find("HTTP/1.1 200 OK") == 0);
    CHECK(hidden.find("secret-job") == std::string::npos);
    CHECK(hidden.find("host0") == std::string::npos);
    const std::string shown =
        http_get(daemon.http_port(), path, "Authorization: Bearer " + kToken + "\r\n");
    CHECK(shown.find("secret-job") != std::string::npos);
    const std::string wrong =
        http_get(daemon.http_port(), path, "authorization: Bearer " + kToken + "x\r\n");
    CHECK(wrong.find("secret-job") == std::string::npos);
  }
  CHECK(http_get(daemon.http_port(), "/status").find("\"jobs_running\": 1") != std::string::npos);
}
