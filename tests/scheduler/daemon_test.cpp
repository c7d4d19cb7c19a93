// dbs-scheduler serve in-process: every bad input is refused with its exact message and the
// connection closed, while a good job on the same daemon runs to the end unharmed.
#include <doctest/doctest.h>

#include "lib/common/error.h"
#include "lib/net/job_key.h"
#include "tests/scheduler/harness.h"

namespace {

using namespace dbs;
using namespace dbs::test;
using proto::ErrorCode;

const std::string kToken = "0123456789abcdef-test-token";
const std::string kGoodKey = net::job_key(kToken, "good");

std::string reg(const std::string& fields) {
  return R"({"v":2,"type":"register","host":"h",)" + fields + "}\n";
}

std::string config_json() {
  return policy::to_json(job_config()).dump();
}

std::string report(const std::string& job, int rank, const std::string& compute_s,
                   const std::string& comm_s) {
  return R"({"v":2,"type":"report","job":")" + job + R"(","rank":)" + std::to_string(rank) +
         R"(,"epoch":1,"batch":64,"samples":640,"steps":10,"compute_s":)" + compute_s +
         R"(,"comm_s":)" + comm_s + R"(,"step_rate_median":0})" + "\n";
}

struct Bad {
  const char* what;
  std::string send;
  std::string error;
  bool registered = false;  // registers as rank 0 of job "bad" before sending
};

std::vector<Bad> bad_clients() {
  const std::string tok = R"("token":")" + kToken + R"(")";
  return {
      {"malformed JSON", "{\"v\":2,\n",
       error_line(ErrorCode::malformed, "malformed JSON at byte 8")},
      {"wrong type", reg(R"("job":"good","rank":"0","world":2,)" + tok),
       error_line(ErrorCode::invalid, "field 'rank' must be an integer, got string")},
      {"oversized line before register", std::string((1 << 16) + 2, 'x'),
       error_line(ErrorCode::too_long, "message longer than 65536 bytes")},
      {"oversized line", std::string((1 << 20) + 2, 'x'),
       error_line(ErrorCode::too_long, "message longer than 1048576 bytes"), true},
      {"unknown message type", "{\"v\":2,\"type\":\"hello\"}\n",
       error_line(ErrorCode::unknown_type, "unknown message type 'hello'")},
      {"wrong protocol version", "{\"v\":1,\"type\":\"heartbeat\"}\n",
       error_line(ErrorCode::version, "unsupported protocol version 1 (expected 2)")},
      {"wrong token",
       reg(R"("job":"good","rank":0,"world":2,"token":"0123456789abcdef-test-tokeX")"),
       error_line(ErrorCode::auth, "invalid token")},
      {"missing token", reg(R"("job":"good","rank":0,"world":2)"),
       error_line(ErrorCode::auth, "missing token")},
      {"empty token", reg(R"("job":"good","rank":0,"world":2,"token":"")"),
       error_line(ErrorCode::auth, "missing token")},
      {"rank out of range", reg(R"("job":"good","rank":2,"world":2,)" + tok),
       error_line(ErrorCode::invalid, "rank 2 out of range for a job of 2 ranks")},
      {"unknown job", reg(R"("job":"nojob","rank":0,"world":2,)" + tok),
       error_line(ErrorCode::unknown_job, "unknown job 'nojob'")},
      {"report before register", report("good", 0, "1", "0"),
       error_line(ErrorCode::state, "register first")},
      {"NaN time", report("bad", 0, "null", "0"),
       error_line(ErrorCode::invalid, "field 'compute_s' must be a finite number >= 0, got null"),
       true},
      {"negative time", report("bad", 0, "1", "-0.5"),
       error_line(ErrorCode::invalid, "field 'comm_s' must be a finite number >= 0, got -0.5"),
       true},
      {"report rank out of range", report("bad", 3, "1", "0"),
       error_line(ErrorCode::invalid, "rank 3 out of range for a job of 1 ranks"), true},
      {"report for an unknown job", report("ghost", 0, "1", "0"),
       error_line(ErrorCode::unknown_job, "unknown job 'ghost'"), true},
      {"register conflict", reg(R"("job":"good","rank":0,"world":3,"token":")" + kGoodKey + "\""),
       error_line(ErrorCode::conflict, "job 'good' has 2 ranks, not 3")},
      {"never a newline", "{\"v\":2,\"type\":\"heartbeat\"",
       error_line(ErrorCode::timeout, "message not completed within 0.3 s")},
  };
}

}  // namespace

TEST_CASE("Daemon.BadClientsAreRefusedWhileAGoodJobCompletes") {
  TempDir dir;
  auto o = test_options();
  o.token_file = dir.file("token", kToken + "\n");
  TestDaemon daemon(o);
  Agent r0(daemon.port(), "good", 0, 2, kToken), r1(daemon.port(), "good", 1, 2, kGoodKey);
  REQUIRE(r0.join());
  REQUIRE(r1.join());
  std::int64_t epoch = 0;
  std::vector<int> batch = {64, 64};
  const auto good_epoch = [&] {
    r0.report(epoch, batch[0], 2000);
    r1.report(epoch, batch[1], 1000);
    const auto p0 = r0.plan(), p1 = r1.plan();
    REQUIRE(p0);
    REQUIRE(p1);
    CHECK(p0->rank == 0);
    CHECK(p1->rank == 1);
    const Plan plan = joined({*p0, *p1});
    CHECK(plan.epoch == epoch + 1);
    batch = plan.batch;
    ++epoch;
  };
  for (const Bad& bad : bad_clients()) {
    CAPTURE(bad.what);
    SocketClient c(daemon.port());
    if (bad.registered) {
      c.send(reg(R"("job":"bad","rank":0,"world":1,"token":")" + net::job_key(kToken, "bad") +
                 R"(","config":)" + config_json()));
      CHECK(c.line().value_or("").find("\"type\":\"plan\"") != std::string::npos);
    }
    c.send(bad.send);
    good_epoch();  // meanwhile the good job runs on, unharmed
    CHECK(c.line() == bad.error);
    CHECK(c.closed_within());
  }
  CHECK(batch == std::vector<int>{85, 43});  // rebalanced to the 2:1 speeds
  for (Agent* a : {&r0, &r1}) {
    a->client().send(proto::encode(proto::GoodbyeMsg{true}));
    CHECK(a->client().line() == R"({"v":2,"type":"goodbye","done":true})");
    CHECK(a->client().closed_within());
  }
}

TEST_CASE("Daemon.WithoutTokenListensOnLoopbackOnly") {
  auto o = test_options();
  o.listen = "0.0.0.0:0";
  try {
    scheduler::Daemon d(o);
    FAIL("a daemon without token listened on 0.0.0.0");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) ==
          "--listen 0.0.0.0:0 is not a loopback address; without --token-file "
          "(or DBS_TOKEN_FILE) or --auth munge the daemon listens on loopback only");
  }
}

TEST_CASE("Daemon.RefusesAReadableTokenFile") {
  TempDir dir;
  auto o = test_options();
  o.token_file = dir.file("token", kToken, 0644);
  try {
    scheduler::Daemon d(o);
    FAIL("a world-readable token file was accepted");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) ==
          "token file " + o.token_file +
              " is accessible by group or others (mode 0644); make it private: chmod 600 " +
              o.token_file);
  }
}

TEST_CASE("Daemon.ReportTimeoutPlansMissingRanksFromTheirLastReport") {
  auto o = test_options();
  o.report_timeout_s = 0.3;
  TestDaemon daemon(o);
  Agent r0(daemon.port(), "t", 0, 2), r1(daemon.port(), "t", 1, 2);
  REQUIRE(r0.join());
  REQUIRE(r1.join());
  r0.report(0, 64, 2000);
  r1.report(0, 64, 1000);
  const auto p0 = r0.plan();
  REQUIRE(p0);
  REQUIRE(r1.plan());
  r0.report(1, p0->batch, 2000);  // rank 1 stays silent
  const auto late = r0.plan(3);
  REQUIRE(late);
  CHECK(late->epoch == 2);
  CHECK(late->reason.find("; no report from rank 1 within 0.3 s: planned from its last report") !=
        std::string::npos);
  const auto for_r1 = r1.plan();  // the silent rank gets it too
  REQUIRE(for_r1);
  CHECK(joined({*late, *for_r1}).reason == late->reason);
}

TEST_CASE("Daemon.ResentReportGetsThePlanAgain") {
  TestDaemon daemon(test_options());
  Agent r0(daemon.port(), "r", 0, 1);
  REQUIRE(r0.join());
  r0.report(0, 128, 1000);
  const auto p = r0.plan();
  REQUIRE(p);
  Agent again(daemon.port(), "r", 0, 1);  // a reconnect replaces the old connection
  REQUIRE(again.join());                  // and is answered with the current plan
  CHECK(r0.client().line() ==
        error_line(ErrorCode::conflict, "replaced by a newer connection of rank 0 of job 'r'"));
  again.report(0, 128, 1000);
  const auto resent = again.plan();
  REQUIRE(resent);
  CHECK(*resent == *p);
}

TEST_CASE("Daemon.FollowsAgentsThatRanAheadOnTheirOwnPolicy") {
  TestDaemon daemon(test_options());
  Agent r0(daemon.port(), "ahead", 0, 2), r1(daemon.port(), "ahead", 1, 2);
  REQUIRE(r0.join());
  REQUIRE(r1.join());
  r0.report(4, 96, 3000);  // epochs 1-4 ran without the daemon, with batches 96 / 32
  r1.report(4, 32, 1000);
  const auto p0 = r0.plan(), p1 = r1.plan();
  REQUIRE(p0);
  REQUIRE(p1);
  const Plan p = joined({*p0, *p1});
  CHECK(p.epoch == 5);
  CHECK(p.batch == std::vector<int>{96, 32});
  CHECK_FALSE(p.changed);  // already balanced for 3:1
}

TEST_CASE("Daemon.AbandonedJobIsFinished") {
  auto o = test_options();
  o.abandon_after_s = 0.2;
  TestDaemon daemon(o);
  {
    Agent r0(daemon.port(), "crashed", 0, 1);
    REQUIRE(r0.join());
  }  // the agent dies without goodbye
  std::optional<std::string> answer;
  for (int i = 0; i < 10; ++i) {  // each probe connects, so it must wait out the limit again
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    Agent again(daemon.port(), "crashed", 0, 1);
    answer = again.join();
    if (answer && answer->find("finished") != std::string::npos) break;
  }
  CHECK(answer == error_line(ErrorCode::state, "job 'crashed' has finished"));
}

TEST_CASE("Daemon.ConnectionLimit") {
  auto o = test_options();
  o.max_connections = 2;
  TestDaemon daemon(o);
  Agent a(daemon.port(), "l", 0, 2), b(daemon.port(), "l", 1, 2);
  REQUIRE(a.join());
  REQUIRE(b.join());
  SocketClient c(daemon.port());
  CHECK(c.line() == error_line(ErrorCode::limit, "too many connections (limit 2)"));
  CHECK(c.closed_within());
  a.client().send("{\"v\":2,\"type\":\"heartbeat\"}\n");
  CHECK(a.client().line() == R"({"v":2,"type":"heartbeat"})");
}

TEST_CASE("Daemon.InvalidPolicyConfigIsRefused") {
  TestDaemon daemon(test_options());
  SocketClient c(daemon.port());
  Settings bad = job_config();
  bad.policy = dbs::parse_policy("fixed:100,20");
  c.send(proto::encode(proto::RegisterMsg{"f", "", 0, 2, "h", bad, "", ""}));
  CHECK(c.line() == error_line(ErrorCode::invalid,
                               "policy 'fixed:100,20': sizes sum to 120, the global batch is 128"));
}
