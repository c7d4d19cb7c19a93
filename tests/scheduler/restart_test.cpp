// The state directory: a daemon restarted on it continues its jobs where the journal ends, the
// trace holds every epoch once, a torn last record is dropped, a bad job is quarantined.
#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "lib/common/error.h"
#include "tests/scheduler/harness.h"

namespace {

using namespace dbs;
using namespace dbs::test;

std::vector<nlohmann::json> read_lines(const std::string& path) {
  std::ifstream f(path);
  std::vector<nlohmann::json> out;
  for (std::string l; std::getline(f, l);) out.push_back(nlohmann::json::parse(l));
  return out;
}

// Runs epochs [from, to) of a 2-rank job "keep" on the daemon.
void run_epochs(std::uint16_t port, std::int64_t from, std::int64_t to, bool finish) {
  Agent r0(port, "keep", 0, 2), r1(port, "keep", 1, 2);
  const auto first = r0.join(), second = r1.join();
  REQUIRE(first);
  REQUIRE(second);
  Plan plan = joined({std::get<proto::PlanMsg>(proto::decode(*first)),
                              std::get<proto::PlanMsg>(proto::decode(*second))});
  CHECK(plan.epoch == from);  // the daemon resumes at the epoch after the journal's last
  for (std::int64_t e = from; e < to; ++e) {
    r0.report(e, plan.batch[0], 3000);
    r1.report(e, plan.batch[1], 1000);
    const auto p0 = r0.plan(), p1 = r1.plan();
    REQUIRE(p0);
    REQUIRE(p1);
    plan = joined({*p0, *p1});
  }
  if (!finish) return;
  for (Agent* a : {&r0, &r1}) {
    a->client().send(proto::encode(proto::GoodbyeMsg{true}));
    CHECK(a->client().closed_within());
  }
}

}  // namespace

TEST_CASE("Restart.TheJobContinuesAndTheTraceHasEveryEpochOnce") {
  TempDir dir;
  auto o = test_options();
  o.state_dir = dir.path() + "/state";
  {
    TestDaemon d(o);
    run_epochs(d.port(), 0, 2, false);
  }
  {
    TestDaemon d(o);
    run_epochs(d.port(), 2, 4, true);
  }
  const auto trace = read_lines(o.state_dir + "/traces/keep.jsonl");
  // header, initial plan, per epoch 2 ranks + eval + plan
  REQUIRE(trace.size() == 2 + 4 * 4);
  CHECK(trace[0]["type"] == "header");
  std::map<std::int64_t, int> plans, ranks, evals;
  for (const auto& r : trace) {
    if (r["type"] == "plan") ++plans[r["epoch"].get<std::int64_t>()];
    if (r["type"] == "rank") ++ranks[r["epoch"].get<std::int64_t>()];
    if (r["type"] == "eval") ++evals[r["epoch"].get<std::int64_t>()];
  }
  CHECK(plans == std::map<std::int64_t, int>{{1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 1}});
  CHECK(ranks == std::map<std::int64_t, int>{{1, 2}, {2, 2}, {3, 2}, {4, 2}});
  CHECK(evals == std::map<std::int64_t, int>{{1, 1}, {2, 1}, {3, 1}, {4, 1}});
  // Replay reads the daemon's trace: the same format as the agents'.
  const replay::Trace read = replay::read_trace(o.state_dir + "/traces/keep.jsonl");
  CHECK(read.warnings.empty());
  REQUIRE(read.epochs.size() == 4);
  CHECK(read.header.world == 2);
  CHECK(read.header.settings == job_config());
  CHECK(read.epochs[3].plans[0].plan.batch == std::vector<int>{96, 32});
  CHECK(read.epochs[3].reports[1].compute_s == doctest::Approx(read.epochs[3].wall_s - 0.01));
  CHECK(trace.back()["source"] == "daemon");
  CHECK(trace.back()["batch"] == nlohmann::json::array({96, 32}));
  // The finished job leaves the journal at the next start; its trace stays.
  { TestDaemon d(o); }
  CHECK(read_lines(o.state_dir + "/journal.jsonl").size() == 1);  // the header alone
  CHECK(read_lines(o.state_dir + "/traces/keep.jsonl").size() == trace.size());
}

TEST_CASE("Restart.ATornLastRecordIsDropped") {
  TempDir dir;
  auto o = test_options();
  o.state_dir = dir.path() + "/state";
  {
    TestDaemon d(o);
    run_epochs(d.port(), 0, 1, false);
  }
  const std::string journal = o.state_dir + "/journal.jsonl";
  const auto whole = read_lines(journal).size();
  std::ofstream(journal, std::ios::app)
      << R"({"type":"epoch","job":"keep","epo)";  // cut by a crash
  {
    TestDaemon d(o);
    run_epochs(d.port(), 1, 2, false);
  }
  CHECK(read_lines(journal).size() == whole + 1);
}

TEST_CASE("Restart.ABadJobIsQuarantinedAndTheOthersAreRestored") {
  TempDir dir;
  auto o = test_options();
  o.state_dir = dir.path() + "/state";
  {
    TestDaemon d(o);
    run_epochs(d.port(), 0, 1, false);
    Agent p(d.port(), "poison", 0, 1);
    REQUIRE(p.join());
    p.report(0, 128, 1000);
    REQUIRE(p.plan());
  }
  // The poison job's epoch record holds a null where a number belongs (what an infinite
  // prediction was written as), and a line of garbage precedes everything.
  const std::string journal = o.state_dir + "/journal.jsonl";
  std::string text = "garbage\n";
  for (auto j : read_lines(journal)) {
    if (j.contains("format")) continue;  // the header: garbage before it makes a v0 journal
    if (j["job"] == "poison" && j["type"] == "epoch") j["plan"]["predicted_epoch_s"] = nullptr;
    text += j.dump() + "\n";
  }
  std::ofstream(journal) << text;
  {
    TestDaemon d(o);  // threw "journal.jsonl line 1: not JSON" before
    run_epochs(d.port(), 1, 2, false);
    SocketClient c(d.http_port());
    c.send("GET /status HTTP/1.1\r\n\r\n");
    std::string all;
    while (const auto l = c.line()) all += *l + "\n";
    const auto status = nlohmann::json::parse(all.substr(all.find("\r\n\r\n") + 4));
    REQUIRE(status["quarantined"].size() == 2);
    CHECK(status["quarantined"][0]["job"] == "poison");
    CHECK(status["quarantined"][0]["why"] ==
          journal +
              " line 5: epoch record: field 'predicted_epoch_s' must be a finite number >= 0, "
              "got null");
    CHECK(status["quarantined"][1]["job"] == "");
    for (const auto& q : status["quarantined"])
      CHECK(std::ifstream(q["path"].get<std::string>()).good());
    CHECK(status["jobs"].size() == 1);  // keep
  }
  for (const auto& j : read_lines(journal))
    if (!j.contains("format")) CHECK(j["job"] == "keep");
  {
    TestDaemon d(o);  // nothing left to quarantine
    run_epochs(d.port(), 2, 3, false);
  }
}
