#include "lib/trace/records.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "lib/trace/trace.h"

using dbs::Fields;
using namespace dbs::trace;

TEST_CASE("Records.Eval.RoundTripsTheAgentsForm") {
  Eval e = eval_of(2, 4.0, 1000, std::vector<double>{200, 300}, 3);
  CHECK(e.ideal_s == 2.0);
  CHECK(e.efficiency == 0.5);
  CHECK(e.images_per_s == 250.0);
  e.train_loss = 0.5;
  e.test_loss = 0.25;
  e.test_acc = 0.875;
  e.busy = {0.5, 1.0};
  e.busy_ideal_s = 3.0;
  const nlohmann::json j = to_json(e);
  CHECK(j.at("type") == "eval");
  CHECK(j.at("epoch") == 3);  // from 1 in the JSON
  const Eval back = eval_from_json(Fields(j));
  CHECK(back.epoch == 2);
  CHECK(back.wall_s == 4.0);
  CHECK(back.replans == 3);
  CHECK(back.train_loss == 0.5);
  CHECK(back.test_acc == 0.875);
  CHECK(back.busy == e.busy);
  CHECK(back.busy_ideal_s == 3.0);
  CHECK(to_json(back) == j);
}

TEST_CASE("Records.Eval.ControlRoundTripsAndAnOlderOneWithoutWaitedReadsAsZero") {
  Eval e = eval_of(0, 10.0, 1000, std::vector<double>{100, 100}, 0);
  Control c;
  c.reports_s = 0.09;
  c.waited_s = 0.05;
  c.plan_s = 0.03;
  c.daemon_s = 0.02;
  e.control = c;
  nlohmann::json j = to_json(e);
  CHECK(j.at("control").at("total_s") == doctest::Approx(0.12));
  const Eval back = eval_from_json(Fields(j));
  REQUIRE(back.control);
  CHECK(back.control->waited_s == 0.05);
  CHECK(back.control->daemon_s == 0.02);
  CHECK(to_json(back) == j);
  j["control"].erase("waited_s");
  CHECK(eval_from_json(Fields(j)).control->waited_s == 0.0);
  j["control"]["waited_s"] = -1;
  CHECK_THROWS_WITH(eval_from_json(Fields(j)), doctest::Contains("waited_s"));
}

TEST_CASE("Records.Eval.TheDaemonsFormHasNoEvaluationAndEvalRecordIsIt") {
  const nlohmann::json j = eval_record(0, 2.0, 100, std::vector<double>{}, 0);
  CHECK(j == to_json(eval_of(0, 2.0, 100, std::vector<double>{}, 0)));
  CHECK(!j.contains("train_loss"));
  CHECK(!j.contains("busy"));
  CHECK(j.at("ideal_s") == 0.0);  // no rank had a rate
  const Eval back = eval_from_json(Fields(j));
  CHECK(!back.test_loss);
  CHECK(back.missing.empty());
}

TEST_CASE("Records.Eval.ADivergedLossIsAbsentNotAnError") {
  Eval e = eval_of(0, 1.0, 10, std::vector<double>{10}, 0);
  e.train_loss = std::numeric_limits<double>::quiet_NaN();  // written as null
  const nlohmann::json j = nlohmann::json::parse(to_json(e).dump());
  CHECK(!eval_from_json(Fields(j)).train_loss);
}

TEST_CASE("Records.Timing.RoundTripsWithAndWithoutThrottling") {
  TimingRecord r{4, 1, {}};
  r.timing.gather = {0.25, 0.125};
  r.timing.allreduce = {1.5, 0.5};
  r.timing.steps = 12;
  r.timing.busy_s = 2.0;
  nlohmann::json j = to_json(r);
  CHECK(j.at("epoch") == 5);
  CHECK(!j.contains("nr_throttled"));  // unknown
  TimingRecord back = timing_from_json(Fields(j));
  CHECK(back.rank == 1);
  CHECK(back.timing.nr_throttled == -1);
  CHECK(to_json(back) == j);
  r.timing.nr_throttled = 3;
  r.timing.throttled_s = 0.5;
  r.timing.quota_cores = 1.5;
  j = to_json(r);
  back = timing_from_json(Fields(j));
  CHECK(back.timing.nr_throttled == 3);
  CHECK(to_json(back) == j);
}

TEST_CASE("Records.Timing.AnOlderRecordWithoutBusyReadsAsZero") {
  const nlohmann::json j = nlohmann::json::parse(
      R"({"type":"timing","epoch":1,"rank":0,"steps":47,"wall_s":7.0,"process_cpu_s":7.0,)"
      R"("gather":{"cpu_s":0.0,"wall_s":0.0},"compute":{"cpu_s":2.0,"wall_s":2.0},)"
      R"("allreduce":{"cpu_s":4.0,"wall_s":4.5},"update":{"cpu_s":0.1,"wall_s":0.1},"sleep_s":0.0})");
  const TimingRecord r = timing_from_json(Fields(j));
  CHECK(r.timing.busy_s == 0.0);
  CHECK(r.timing.allreduce.wall_s == 4.5);
}

TEST_CASE("Records.Cpu.RoundTripsAndRejectsANegativeQuota") {
  const CpuRecord c{0, 2, "node-b", 1.5, 7, 0.25, 0.1};
  const nlohmann::json j = to_json(c);
  CHECK(j.at("type") == "cpu");
  const CpuRecord back = cpu_from_json(Fields(j));
  CHECK(back.host == "node-b");
  CHECK(back.nr_throttled == 7);
  CHECK(back.period_s == 0.1);
  CHECK(to_json(back) == j);
  nlohmann::json older = j;  // written before the period was recorded
  older.erase("period_s");
  CHECK(cpu_from_json(Fields(older)).period_s == 0.0);
  nlohmann::json bad = j;
  bad["quota_cores"] = -1;
  CHECK_THROWS_WITH_AS(cpu_from_json(Fields(bad, "t:3: cpu record")),
                       "t:3: cpu record: field 'quota_cores' must be a finite number >= 0, got -1",
                       dbs::FieldError);
}
