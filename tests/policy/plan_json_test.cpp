// The one JSON form of Plan, Report and Settings: round trips, and the exact message of each
// rejection (the protocol, the journal, the trace reader and checkpoints all read through it).
#include "lib/policy/plan.h"

#include <doctest/doctest.h>

#include <string>

#include "tests/policy/sample_plan.h"

namespace {

using namespace dbs;
using namespace dbs::policy;
using dbs::test::sample_plan;
using nlohmann::json;

// The FieldError message of reading j as a plan ("accepted" if none).
std::string plan_error(const json& j) {
  try {
    plan_from_json(dbs::Fields(j, "t.jsonl:2: plan record"));
  } catch (const dbs::FieldError& e) {
    return e.what();
  }
  return "accepted";
}

json plan_with(const std::string& field, const std::string& value) {
  json j = to_json(sample_plan());
  j[field] = json::parse(value);
  return j;
}

}  // namespace

TEST_CASE("PlanJson.RoundTrips") {
  const Plan p = sample_plan();
  CHECK(to_json(p)["epoch"] == 4);  // from 1 in JSON
  CHECK(plan_from_json(dbs::Fields(json::parse(to_json(p).dump()))) == p);
  CHECK_FALSE(to_json(p).contains("exchange_epoch_s"));  // unknown (0): not written
  Plan x = p;
  x.exchange_epoch_s = 0.25;  // the exchange's part of the predicted epoch
  CHECK(to_json(x)["exchange_epoch_s"] == 0.25);
  CHECK(plan_from_json(dbs::Fields(json::parse(to_json(x).dump()))) == x);
  CHECK(plan_error(plan_with("exchange_epoch_s", "-1")).find("exchange_epoch_s") !=
        std::string::npos);

  Report r;
  r.rank = 1;
  r.epoch = 4;
  r.batch = 61;
  r.samples = 7808;
  r.steps = 128;
  r.compute_s = 1.2345678901234567;
  r.comm_s = 0.1;
  r.step_rate_median = 6400.5;
  CHECK(report_from_json(dbs::Fields(json::parse(to_json(r).dump()))) == r);
  CHECK(r.throughput() == doctest::Approx(7808 / 1.2345678901234567));
  CHECK(Report{}.throughput() == 0);

  Settings s;
  s.policy = dbs::parse_policy("fixed:96,32");
  s.samples_per_epoch = 6000;
  s.min_batch = 8;
  s.max_batch = 120;
  s.min_gain = 0.05;
  s.rebalance_every = 12;
  CHECK(settings_from_json(dbs::Fields(json::parse(to_json(s).dump()))) == s);
  json old = to_json(s);
  old.erase("rebalance_every");  // written before it was a setting
  CHECK(settings_from_json(dbs::Fields(old)).rebalance_every == 0);
  CHECK_FALSE(old.contains("average_every"));  // synchronous: written as before averaging was
  s.average_every = 4;
  s.average_after_epochs = 2;
  CHECK(to_json(s)["average_every"] == 4);
  CHECK(settings_from_json(dbs::Fields(json::parse(to_json(s).dump()))) == s);
  json bad = to_json(s);
  bad["average_every"] = -2;
  try {
    settings_from_json(dbs::Fields(bad, "config"));
    FAIL("a negative average_every was accepted");
  } catch (const dbs::FieldError& e) {
    CHECK(std::string(e.what()).find("average_every") != std::string::npos);
  }
}

TEST_CASE("PlanJson.Rejects.InconsistentPlans") {
  CHECK(plan_error(plan_with("batch", "[85,42]")) ==
        "t.jsonl:2: plan record: plan batch sizes sum to 127, not its global batch 128");
  CHECK(plan_error(plan_with("offset", "[0,84]")) ==
        "t.jsonl:2: plan record: plan offsets do not follow from its batch sizes");
  CHECK(plan_error(plan_with("offset", "[0]")) ==
        "t.jsonl:2: plan record: plan has 2 batch sizes, 1 offsets and 2 throughputs");
  CHECK(plan_error(plan_with("batch", "[85,-1]")) ==
        "t.jsonl:2: plan record: field 'batch' item 1 must be an integer in [0, 2147483647], "
        "got -1");
  CHECK(plan_error(plan_with("throughput", "[1,null]")) ==
        "t.jsonl:2: plan record: field 'throughput' item 1 must be a finite number >= 0, got null");
  json j = to_json(sample_plan());
  j.erase("reason");
  CHECK(plan_error(j) == "t.jsonl:2: plan record: missing field 'reason'");
  CHECK(plan_error(json::array()) == "t.jsonl:2: plan record: is not a JSON object");
}

TEST_CASE("PlanJson.Report.WorkPointsRoundTripAndAreOptional") {
  Report r;
  r.rank = 1;
  r.batch = 73;
  r.samples = 1700;
  r.steps = 24;
  r.compute_s = 9.5;
  r.work[0] = {73, 23, 0.412, 0.061};
  r.work[1] = {32, 1, 0.2, 0};
  const json j = to_json(r);
  CHECK(j["work"] == json::parse("[[73, 23, 0.412, 0.061], [32, 1, 0.2, 0.0]]"));
  CHECK(report_from_json(dbs::Fields(json::parse(j.dump()))) == r);
  Report without = r;
  without.work = {};
  CHECK_FALSE(to_json(without).contains("work"));
  CHECK(report_from_json(dbs::Fields(to_json(without))) == without);
}

TEST_CASE("PlanJson.Report.RejectsBadWorkPoints") {
  const auto error = [](const char* work) -> std::string {
    json j = to_json(Report{});
    j["work"] = json::parse(work);
    try {
      report_from_json(dbs::Fields(j));
    } catch (const dbs::FieldError& e) {
      return e.what();
    }
    return "accepted";
  };
  const std::string entry0 =
      "field 'work' entry 0 must be [batch in [1, 2^30], steps in [1, 2^40], mean_s and sd_s in "
      "[0, 1e9]]";
  CHECK(error("[[0, 1, 0.1, 0]]") == entry0);
  CHECK(error("[[5, 0, 0.1, 0]]") == entry0);
  CHECK(error("[[5, 1, -0.1, 0]]") == entry0);
  CHECK(error("[[5, 1, 1e10, 0]]") == entry0);
  CHECK(error("[[5.5, 1, 0.1, 0]]") == entry0);
  CHECK(error("[[5, 1, 0.1]]") == entry0);
  CHECK(error("[[5, 1, 0.1, 0], [6, 1, \"x\", 0]]") ==
        "field 'work' entry 1 must be [batch in [1, 2^30], steps in [1, 2^40], mean_s and sd_s in "
        "[0, 1e9]]");
  CHECK(error("[[1, 1, 0, 0], [1, 1, 0, 0], [1, 1, 0, 0]]").find("at most 2") != std::string::npos);
  CHECK(error("{}").find("field 'work' must be an array") != std::string::npos);
}
