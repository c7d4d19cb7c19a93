// What replay shows: the --json object, the text table, the HTML report, the --compare list, and
// the synthetic spec's checks.
#include <doctest/doctest.h>

#include "lib/replay/replay.h"
#include "lib/replay/report.h"
#include "lib/replay/summary.h"
#include "lib/replay/synth.h"
#include "tests/replay/helpers.h"

namespace {

using namespace dbs::replay;
using namespace dbs::replay::test;
using nlohmann::json;

Replay replay_speeds(const std::string& speeds, std::vector<std::string> policies) {
  const Spec spec =
      parse_spec(json::parse(R"({"epochs": 4, "policy": "static", "samples_per_epoch": 20000,
                     "global_batch": 256, "speeds": )" +
                             speeds + "}"),
                 "s.json");
  ReplayOptions o;
  for (const std::string& p : policies) o.policies.push_back(dbs::parse_policy(p));
  return replay(parse_trace(synthesize(spec), "s.jsonl"), o);
}

}  // namespace

TEST_CASE("Summary.Json.KeyPerPolicyWithTotalsAndSpeedup") {
  const Replay r = replay_speeds("[1, 0.5]", {"dbs", "static"});
  const json j = json_summary(r);
  REQUIRE(j.size() == 2);
  for (const char* key : {"dbs", "static"}) {
    CAPTURE(key);
    REQUIRE(j.contains(key));
    for (const char* field :
         {"total_s", "ideal_s", "efficiency", "speedup_vs_static", "plan_changes", "epochs"}) {
      CHECK(j[key].contains(field));
    }
    CHECK(j[key]["epochs"].size() == 4);
  }
  CHECK(j["static"]["speedup_vs_static"].get<double>() == 1.0);
  CHECK(j["dbs"]["speedup_vs_static"].get<double>() > 1.2);
  CHECK(j["dbs"]["plan_changes"].get<int>() == 1);
  CHECK(j["static"]["recorded_total_s"].get<double>() ==
        doctest::Approx(j["static"]["total_s"].get<double>()).epsilon(1e-5));
  CHECK_FALSE(j["dbs"].contains("recorded_total_s"));
  CHECK(j["dbs"]["efficiency"].get<double>() ==
        doctest::Approx(j["dbs"]["ideal_s"].get<double>() / j["dbs"]["total_s"].get<double>()));
}

TEST_CASE("Summary.Json.SpeedupAgainstStaticEvenWhenNotCompared") {
  const Replay r = replay_speeds("[1, 0.5]", {"dbs"});
  const json j = json_summary(r);
  CHECK(j.size() == 1);
  CHECK(j["dbs"]["speedup_vs_static"].get<double>() ==
        doctest::Approx(r.baseline.total_s / r.results[0].total_s));
}

TEST_CASE("Summary.Text.OneColumnPerPolicyAndTotals") {
  const std::string one = text_summary(replay_speeds("[1, 0.5]", {}));
  CHECK(one.find("epoch  time_s  ideal_s  efficiency  changes  balanced  imbalance  exchange  "
                 "overhead  recorded_s  error") != std::string::npos);
  CHECK(one.find("speedup over static: 1.000x") != std::string::npos);
  const std::string many =
      text_summary(replay_speeds("[1, 0.5]", {"dbs", "static", "fixed:170,86"}));
  CHECK(many.find("\nepoch          dbs  static  fixed:170,86  ideal_s  recorded_s\n") !=
        std::string::npos);
  for (const char* row : {"\ntotal ", "\nefficiency ", "\nchanges ", "\nspeedup "}) {
    CHECK(many.find(row) != std::string::npos);
  }
}

TEST_CASE("Report.Html.SelfContainedWithChartsAndTable") {
  const std::string two = html_report(replay_speeds("[1, 0.5]", {"dbs", "static"}));
  CHECK(two.starts_with("<!DOCTYPE html>"));
  CHECK(two.find("<svg") != std::string::npos);
  CHECK(two.find("<table>") != std::string::npos);
  CHECK(two.find("rank 1") != std::string::npos);  // one line per rank
  CHECK(two.find("Batch size per rank: static") != std::string::npos);
  for (const char* external : {"<script", "src=", "href=", "url(", "@import"}) {
    CHECK(two.find(external) == std::string::npos);
  }
  std::string speeds = "[1";
  for (int i = 1; i < 20; ++i) speeds += i % 3 == 0 ? ", 0.5" : ", 1";
  const std::string many = html_report(replay_speeds(speeds + "]", {"dbs"}));
  CHECK(many.find("10th-90th percentile") != std::string::npos);  // bands, not 20 lines
  CHECK(many.find("rank 19") == std::string::npos);
}

TEST_CASE("Replay.SplitPolicies.KeepsFixedListsTogether") {
  const auto names = [](const std::string& list) {
    std::vector<std::string> out;
    for (const dbs::PolicySpec& p : split_policies(list)) out.push_back(to_string(p));
    return out;
  };
  CHECK(names("dbs,static") == std::vector<std::string>{"dbs", "static"});
  CHECK(names(" dbs , fixed:96,32,static,dbs") ==
        std::vector<std::string>{"dbs", "fixed:96,32", "static"});
  CHECK(names(",").empty());
  CHECK_THROWS_WITH_AS(split_policies("dbs,fastest"),
                       "unknown policy 'fastest': expected dbs, dbs-rate, static or "
                       "fixed:b0,b1,... (dbs-cost = dbs)",
                       dbs::ConfigError);
}

TEST_CASE("Synth.Spec.NodeTypesAndChecks") {
  const Spec s = parse_spec(json::parse(R"({"epochs": 2, "samples_per_epoch": 6000,
      "nodes": [{"name": "x", "count": 3, "epoch_s": 12}, {"speed": 0.5}],
      "disturbances": [{"ranks": "1-2", "factor": 2, "from": 1.5}]})"),
                            "s.json");
  CHECK(s.world() == 4);
  CHECK(s.nodes[0].throughput == doctest::Approx(500));
  CHECK(s.nodes[1].throughput == doctest::Approx(500));  // base_throughput 1000 x 0.5
  CHECK(s.slowdowns.size() == 2);
  CHECK(s.slowdowns[1].rank == 2);
  const auto error = [](const std::string& text) {
    return input_error([&] { parse_spec(json::parse(text), "s.json"); });
  };
  CHECK(error(R"({"epoch": 2, "speeds": [1]})")
            .starts_with("s.json: synthetic spec: unknown field 'epoch' (known: epochs,"));
  CHECK(error(R"({"epochs": 2})") ==
        "s.json: synthetic spec: give exactly one of 'nodes' and 'speeds'");
  CHECK(error(R"({"epochs": 2, "speeds": []})") ==
        "s.json: synthetic spec: 'speeds' is not a non-empty array");
  CHECK(error(R"({"epochs": 2, "nodes": []})") ==
        "s.json: synthetic spec: 'nodes' is not a non-empty array");
  CHECK(error(R"({"epochs": 2, "nodes": [{"count": 2}]})") ==
        "s.json: nodes[0]: give exactly one of 'speed', 'throughput', 'epoch_s' and 'beta_s'");
  CHECK(error(R"({"epochs": 2, "speeds": [1, 1], "disturbances": [{"rank": 2, "factor": 2}]})") ==
        "s.json: disturbances[0]: field 'rank' must be an integer in [0, 1], got 2");
  CHECK(error(R"({"epochs": 2, "global_batch": 2, "speeds": [1, 1, 1]})") ==
        "s.json: synthetic spec: 3 ranks x min_batch 1 do not fit in global_batch 2");
}
