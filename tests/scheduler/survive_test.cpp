// The daemon survives its clients (issue 10, "Found" 1-4, 7, 8): each case is an attack or a
// buggy agent that took today's daemon down or hurt another job, and what happens now.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <iterator>

#include "lib/common/error.h"
#include "tests/scheduler/harness.h"

namespace {

using namespace dbs;
using namespace dbs::test;
using proto::ErrorCode;

std::string raw_report(const std::string& job, int rank, int epoch, const std::string& compute_s) {
  return R"({"v":2,"type":"report","job":")" + job + R"(","rank":)" + std::to_string(rank) +
         R"(,"epoch":)" + std::to_string(epoch) +
         R"(,"batch":128,"samples":1280,"steps":10,"compute_s":)" + compute_s +
         R"(,"comm_s":0,"step_rate_median":0})" + "\n";
}

}  // namespace

TEST_CASE("Survive.DenormalComputeTimeIsRefusedAndTheJobPlansOn") {
  TempDir dir;
  auto o = test_options();
  o.state_dir = dir.path() + "/state";
  o.report_timeout_s = 0.2;
  TestDaemon daemon(o);
  Agent a(daemon.port(), "j", 0, 1);
  REQUIRE(a.join());
  a.client().send(raw_report("j", 0, 1, "1e-320"));
  CHECK(a.client().line() ==
        error_line(ErrorCode::invalid,
                   "field 'compute_s' must be 0 or a number in [1e-09, 1e+09], got 1e-320"));
  Agent again(daemon.port(), "j", 0, 1);
  REQUIRE(again.join());
  again.report(0, 128, 1000);
  const auto p = again.plan();
  REQUIRE(p);
  CHECK(p->epoch == 1);
  CHECK(daemon.stop() == 0);
}

namespace {

void goodbye(Agent& a) {
  a.client().send(proto::encode(proto::GoodbyeMsg{true}));
  CHECK(a.client().line() == R"({"v":2,"type":"goodbye","done":true})");
}

}  // namespace

TEST_CASE("Survive.StaleConnectionOfAnErasedJobCannotTouchItsSuccessor") {
  TestDaemon daemon(test_options());
  // Jobs x and y (3 ranks): ranks 0 and 1 say goodbye, then connect again (allowed while the
  // job runs); rank 2's goodbye finishes the job and leaves the two newer connections open.
  std::vector<std::unique_ptr<Agent>> stale;
  for (const std::string id : {"x", "y"}) {
    Agent r0(daemon.port(), id, 0, 3), r1(daemon.port(), id, 1, 3), r2(daemon.port(), id, 2, 3);
    for (Agent* a : {&r0, &r1, &r2}) REQUIRE(a->join());
    goodbye(r0);
    goodbye(r1);
    for (int rank : {0, 1}) {
      stale.push_back(std::make_unique<Agent>(daemon.port(), id, rank, 3));
      REQUIRE(stale.back()->join());
    }
    goodbye(r2);
  }
  // kFinishedKept newer jobs finish: x and y are forgotten, and their ids are free again.
  for (std::size_t i = 0; i < scheduler::JobTable::kFinishedKept; ++i) {
    Agent a(daemon.port(), "f" + std::to_string(i), 0, 1);
    REQUIRE(a.join());
    goodbye(a);
  }
  Agent x(daemon.port(), "x", 0, 1), y(daemon.port(), "y", 0, 1);
  REQUIRE(x.join());
  REQUIRE(y.join());
  // The stale rank 1 of x wrote done[1] past the end of the new x's vector (ASan) ...
  goodbye(*stale[1]);
  // ... the stale rank 0 of x finished the new x ...
  goodbye(*stale[0]);
  // ... and the stale rank 0 of y reported into the new y.
  stale[2]->report(0, 128, 1000);
  CHECK(stale[2]->client().line() ==
        error_line(ErrorCode::state, "this connection no longer holds rank 0 of job 'y'"));
  CHECK_FALSE(y.plan(0.5));  // no plan came from the stale report
  Agent x_again(daemon.port(), "x", 0, 1);
  const auto answer = x_again.join();
  REQUIRE(answer);
  CHECK(answer->find("\"type\":\"plan\"") != std::string::npos);  // x still runs
}

TEST_CASE("Survive.EpochThatWouldWrapIsRefused") {
  TestDaemon daemon(test_options());
  Agent a(daemon.port(), "wrap", 0, 1);
  REQUIRE(a.join());
  a.client().send(raw_report("wrap", 0, 1, "1").replace(
      raw_report("wrap", 0, 1, "1").find("\"epoch\":1"), 9, "\"epoch\":9223372036854775807"));
  CHECK(a.client().line() ==
        error_line(ErrorCode::invalid,
                   "field 'epoch' must be an integer in [1, 1000000], got 9223372036854775807"));
}

TEST_CASE("Survive.HeartbeatBeforeRegisterIsRefused") {
  auto o = test_options();
  o.hello_timeout_s = 0.5;
  TestDaemon daemon(o);
  SocketClient c(daemon.port());
  c.send("{\"v\":2,\"type\":\"heartbeat\"}\n");
  CHECK(c.line() == error_line(ErrorCode::state, "register first"));
  CHECK(c.closed_within());
}

TEST_CASE("Survive.UnregisteredConnectionTimesOutWhileSendingBytes") {
  auto o = test_options();
  o.hello_timeout_s = 0.6;
  o.line_timeout_s = 5;
  TestDaemon daemon(o);
  SocketClient c(daemon.port());
  // A line that grows slowly within the line limit never registers: the register deadline
  // counts from the connect.
  for (int i = 0; i < 12; ++i) {
    c.send(" ");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  CHECK(c.line() == error_line(ErrorCode::timeout, "no message for 0.6 s"));
}

TEST_CASE("Survive.TraceThatCannotBeOpenedDoesNotStopTheDaemon") {
  TempDir dir;
  auto o = test_options();
  o.state_dir = dir.path() + "/state";
  {
    TestDaemon daemon(o);
    REQUIRE(std::system(("rm -rf '" + o.state_dir + "/traces'").c_str()) == 0);
    Agent a(daemon.port(), "t", 0, 1);
    REQUIRE(a.join());  // the trace fopen fails; the plan still comes
    a.report(0, 128, 1000);
    CHECK(a.plan());
    goodbye(a);
    CHECK(daemon.stop() == 0);  // was fclose(NULL): SIGSEGV
  }
  TestDaemon again(o);  // the restart rewrites the trace from the journal
  std::ifstream trace(o.state_dir + "/traces/t.jsonl");
  std::string line;
  int lines = 0;
  while (std::getline(trace, line)) ++lines;
  CHECK(lines == 5);  // header, initial plan, rank 0's report, epoch 1's eval, the plan of epoch 2
}

TEST_CASE("Survive.HalfClosedClientGetsItsReply") {
  TempDir dir;
  auto o = test_options();
  o.state_dir = dir.path() + "/state";  // the plan of a new job goes out after the journal sync
  TestDaemon daemon(o);
  SocketClient c(daemon.port());
  c.send(proto::encode(proto::RegisterMsg{"half", "", 0, 1, "h", job_config(), "", ""}));
  c.shutdown_write();
  const auto line = c.line();
  REQUIRE(line);
  CHECK(line->find(R"("type":"plan",)") != std::string::npos);
  CHECK(line->find(R"("epoch":1,)") != std::string::npos);
  CHECK(line->find(R"("job":"half",)") != std::string::npos);
  CHECK(c.closed_within());
}

TEST_CASE("Survive.PeerTextCannotForgeALogLine") {
  TestDaemon daemon(test_options());
  TempDir dir;
  const std::string path = dir.path() + "/stderr";
  std::fflush(stderr);
  const int saved = ::dup(2);
  const int file = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ::dup2(file, 2);
  log::set_level(log::Level::info);
  SocketClient c(daemon.port());
  // A policy name carrying a log line of its own, in a register made by hand (a Settings holds
  // only policies it could read).
  nlohmann::json reg = nlohmann::json::parse(
      proto::encode(proto::RegisterMsg{"p", "", 0, 1, "h", job_config(), "", ""}));
  reg["config"]["policy"] =
      "dbs\n2026-01-01T00:00:00.000Z dbs [dbs-scheduler] info: job 'payroll' finished after 9 "
      "planned epochs";
  c.send(reg.dump() + "\n");
  const auto answer = c.line();
  log::set_level(log::Level::error);
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  ::close(file);
  REQUIRE(answer);
  CHECK(answer->find("\"code\":\"invalid\"") != std::string::npos);
  std::ifstream in(path);
  const std::string log_text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(log_text.find("unknown policy 'dbs\\n2026-01-01T00:00:00.000Z dbs [dbs-scheduler] info: "
                      "job 'payroll'") != std::string::npos);
  CHECK(log_text.find("\n2026-01-01T00:00:00.000Z dbs [dbs-scheduler] info: job 'payroll'") ==
        std::string::npos);
}
