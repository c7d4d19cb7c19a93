// The cluster spec's step costs, network and noise fields (lib/replay/synth.h): what they parse
// to, and the exact error of each bad entry.
#include <doctest/doctest.h>

#include <functional>
#include <string>

#include "lib/common/error.h"
#include "lib/replay/synth.h"

namespace {

using namespace dbs::replay;
using nlohmann::json;

std::string input_error(const std::string& text) {
  try {
    parse_spec(json::parse(text), "s.json");
  } catch (const dbs::InputError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("Spec.Nodes.CostFromAlphaAndBetaOrThroughput") {
  const Spec s = parse_spec(json::parse(R"({"epochs": 2, "samples_per_epoch": 6000,
      "nodes": [{"name": "a", "count": 2, "alpha_s": 0.01, "beta_s": 0.002},
                {"name": "b", "epoch_s": 12}, {"speed": 0.5}]})"),
                            "s.json");
  REQUIRE(s.world() == 4);
  CHECK(s.nodes[0].alpha_s == 0.01);
  CHECK(s.nodes[0].throughput == doctest::Approx(500));
  CHECK(s.nodes[1].alpha_s == 0);
  CHECK(s.node_of(1).name == "a");
  CHECK(s.node_of(2).name == "b");
  CHECK(s.node_of(3).name == "node2");
  const auto costs = costs_of(s);  // no noise: every epoch the same
  REQUIRE(costs.size() == 2);
  CHECK(costs[1][0].alpha == 0.01);
  CHECK(costs[1][0].beta == doctest::Approx(0.002));
  CHECK(costs[1][2].beta == doctest::Approx(1.0 / 500));
  CHECK(costs[1][3].beta == doctest::Approx(1.0 / 500));  // base_throughput 1000 x 0.5
}

TEST_CASE("Spec.Nodes.NoiseDrawsAreCostsOfAndClusterOfAlike") {
  const Spec s = parse_spec(json::parse(R"({"epochs": 3, "noise": 0.1, "seed": 4,
      "nodes": [{"count": 3, "alpha_s": 0.5, "throughput": 100}]})"),
                            "s.json");
  const Cluster c = cluster_of(s);
  const auto costs = costs_of(s);
  for (std::size_t e = 0; e < 3; ++e) {
    for (std::size_t i = 0; i < 3; ++i) {
      CHECK(costs[e][i].alpha == 0.5);
      CHECK(costs[e][i].beta == doctest::Approx(1.0 / c.base[e][i]));
    }
  }
  CHECK(costs[0][0].beta != costs[1][0].beta);
}

TEST_CASE("Spec.Network.PerRankLinksAndTheRingsPace") {
  const Spec s = parse_spec(json::parse(R"({"epochs": 1, "speeds": [1, 1, 1, 1],
      "latency_s": 1e-5, "bandwidth": 1e9, "params": 1000,
      "network": [{"ranks": "2-3", "bandwidth": 1e8}, {"rank": 3, "latency_s": 1e-3}]})"),
                            "s.json");
  REQUIRE(s.links.size() == 4);
  CHECK(s.links[0] == Link{1e-5, 1e9});
  CHECK(s.links[2] == Link{1e-5, 1e8});
  CHECK(s.links[3] == Link{1e-3, 1e9});  // the last entry naming a rank wins, the rest default
  CHECK(s.slowest_link() == Link{1e-3, 1e8});
  const CostModel m = cost_of(s);
  CHECK(m.latency_s == 1e-3);
  CHECK(m.bandwidth == 1e8);
  CHECK(m.allreduce_s == doctest::Approx(ring_allreduce_s(4, m.bytes, 1e-3, 1e8)));
  // Without a network entry every rank has the spec's link; bandwidth 0 is infinite.
  const Spec free = parse_spec(json::parse(R"({"epochs": 1, "speeds": [1, 1], "bandwidth": 0,
      "network": [{"rank": 1, "latency_s": 0}]})"),
                               "s.json");
  CHECK(free.slowest_link() == Link{20e-6, 0});
}

TEST_CASE("Spec.BadInput.OneClearErrorNamingTheField") {
  CHECK(input_error(R"({"epochs": 1, "nodes": [{"count": 2, "beta_s": -0.001}]})") ==
        "s.json: nodes[0]: field 'beta_s' must be a finite number > 0, got -0.001");
  CHECK(input_error(R"({"epochs": 1, "nodes": [{"count": 2, "throughput": 0}]})") ==
        "s.json: nodes[0]: field 'throughput' must be a finite number > 0, got 0");
  CHECK(input_error(R"({"epochs": 1, "nodes": [{"count": 2, "alpha_s": 0.1}]})") ==
        "s.json: nodes[0]: give exactly one of 'speed', 'throughput', 'epoch_s' and 'beta_s'");
  CHECK(input_error(R"({"epochs": 1, "nodes": [{"speed": 1, "alpha_s": -1}]})") ==
        "s.json: nodes[0]: field 'alpha_s' must be a finite number >= 0, got -1");
  CHECK(input_error(R"({"epochs": 1, "speeds": [1, 1], "network": [{"ranks": [], "latency_s": 1}]})") ==
        "s.json: network[0]: 'ranks' names no rank");
  CHECK(input_error(R"({"epochs": 1, "speeds": [1, 1], "network": [{"latency_s": 1}]})") ==
        "s.json: network[0]: give exactly one of 'rank' and 'ranks'");
  CHECK(input_error(R"({"epochs": 1, "speeds": [1, 1], "network": [{"rank": 2, "latency_s": 1}]})") ==
        "s.json: network[0]: field 'rank' must be an integer in [0, 1], got 2");
  CHECK(input_error(R"({"epochs": 1, "speeds": [1, 1], "network": [{"ranks": "1-3", "bandwidth": 1}]})") ==
        "s.json: network[0]: 'ranks' \"1-3\" is not a range first-last within 0-1");
  CHECK(input_error(R"({"epochs": 1, "speeds": [1, 1], "network": [{"rank": 0}]})") ==
        "s.json: network[0]: give 'latency_s' or 'bandwidth' (or both)");
  CHECK(input_error(R"({"epochs": 1, "speeds": [1], "network": {"rank": 0}})") ==
        "s.json: synthetic spec: 'network' is not an array");
  CHECK(input_error(R"({"epochs": 1, "speeds": [1], "cpu_share": 1.5})") ==
        "s.json: synthetic spec: field 'cpu_share' must be a finite number in [0, 1], got 1.5");
  CHECK(input_error(R"({"epochs": 1, "speeds": [1], "disturbances": [{"ranks": [], "factor": 2}]})") ==
        "s.json: disturbances[0]: 'ranks' names no rank");
}

TEST_CASE("Spec.Synthesize.CostsEveryStepItsAlpha") {
  // 1,280 samples in steps of 128: 10 steps, each alpha_s = 0.01 s longer.
  const auto wall = [](const std::string& node) {
    const Spec s = parse_spec(json::parse(R"({"epochs": 1, "samples_per_epoch": 1280,
        "global_batch": 128, "overhead_s": 0, "nodes": [)" + node + "]}"),
                              "s.json");
    const std::string trace = synthesize(s);
    double w = -1;
    for (std::size_t at = 0; at < trace.size();) {
      const std::size_t end = trace.find('\n', at);
      const json r = json::parse(trace.substr(at, end - at));
      if (r["type"] == "eval") w = r["wall_s"].get<double>();
      at = end == std::string::npos ? trace.size() : end + 1;
    }
    return w;
  };
  const double plain = wall(R"({"name": "x", "throughput": 1000})");
  const double fixed = wall(R"({"name": "x", "throughput": 1000, "alpha_s": 0.01})");
  CHECK(plain == doctest::Approx(1.28).epsilon(0.02));
  CHECK(fixed - plain == doctest::Approx(0.1).epsilon(0.02));
}
