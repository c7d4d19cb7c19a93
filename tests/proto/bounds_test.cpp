// The numeric bounds of the protocol (lib/proto/checks.h): decode refuses every value outside
// its range with the exact message, and accepts the extremes inside it.
#include <doctest/doctest.h>

#include <limits>
#include <string>

#include "lib/proto/checks.h"
#include "lib/proto/codec.h"

namespace {

using namespace dbs;
using proto::ErrorCode;

// A report line with one field replaced by `value` (raw JSON text).
std::string report_with(const std::string& field, const std::string& value) {
  std::string fields[][2] = {{"epoch", "1"},     {"batch", "64"},   {"samples", "640"},
                             {"steps", "10"},    {"compute_s", "1"}, {"comm_s", "0.1"},
                             {"step_rate_median", "0"}};
  std::string line = R"({"v":2,"type":"report","job":"j","rank":0)";
  for (auto& [k, v] : fields) line += ",\"" + k + "\":" + (k == field ? value : v);
  return line + "}";
}

std::string refusal(const std::string& line) {
  try {
    proto::decode(line);
  } catch (const proto::ProtocolError& e) {
    CHECK(e.code() == ErrorCode::invalid);
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("Proto.Bounds.TinyAndHugeFiguresAreRefused") {
  // 1e-320 is a denormal: samples / compute_s was infinite and took the daemon down.
  CHECK(refusal(report_with("compute_s", "1e-320")) ==
        "field 'compute_s' must be 0 or a number in [1e-09, 1e+09], got 1e-320");
  CHECK(refusal(report_with("compute_s", "2.2250738585072014e-308")) ==
        "field 'compute_s' must be 0 or a number in [1e-09, 1e+09], got 2.2250738585072014e-308");
  CHECK(refusal(report_with("step_rate_median", "1e-310")) ==
        "field 'step_rate_median' must be 0 or a number in [1e-09, 1e+09], got 1e-310");
  CHECK(refusal(report_with("comm_s", "1e10")) ==
        "field 'comm_s' must be 0 or a number in [1e-09, 1e+09], got 1e+10");
  CHECK(refusal(report_with("compute_s", "1e-9")) == "accepted");
  CHECK(refusal(report_with("compute_s", "1e9")) == "accepted");
  CHECK(refusal(report_with("compute_s", "0")) == "accepted");
}

TEST_CASE("Proto.Bounds.EpochAndCountsStayWithinPlanArithmetic") {
  CHECK(refusal(report_with("epoch", "9223372036854775807")) ==
        "field 'epoch' must be an integer in [1, 1000000], got 9223372036854775807");
  CHECK(refusal(report_with("epoch", "1000000")) == "accepted");
  CHECK(refusal(report_with("samples", "1000000000000001")) ==
        "field 'samples' must be an integer in [0, 1000000000000000], got 1000000000000001");
  CHECK(refusal(report_with("steps", "9223372036854775807")) ==
        "field 'steps' must be an integer in [0, 1000000000000000], got 9223372036854775807");
  nlohmann::json config = policy::to_json(Settings{});
  config["samples_per_epoch"] = 9223372036854775807LL;
  CHECK(refusal(R"({"v":2,"type":"register","job":"j","token":"","rank":0,"world":1,"host":"h",)"
                R"("config":)" + config.dump() + "}") ==
        "field 'samples_per_epoch' must be an integer in [0, 1000000000000000], got "
        "9223372036854775807");
  Plan p;
  p.epoch = proto::kMaxEpoch + 1;  // wire epoch kMaxEpoch + 2
  p.global_batch = 1;
  p.batch = {1};
  p.offset = {0};
  p.throughput = {0};
  std::string line = proto::PlanLines("j", p).line(0);
  line.pop_back();
  CHECK(refusal(line) == "field 'epoch' must be an integer in [1, 1000001], got 1000002");
}

TEST_CASE("Proto.PlanRefusal.NamesWhatAnAgentWouldRefuse") {
  Settings c;
  c.global_batch = 4;
  Plan p;
  p.epoch = 3;
  p.global_batch = 4;
  p.batch = {3, 1};
  p.offset = {0, 3};
  p.throughput = {3, 1};
  CHECK(proto::plan_refusal(p, 3, 2, c) == "");
  CHECK(proto::plan_refusal(p, 2, 2, c) == "plan is for epoch 4, expected epoch 3");
  p.predicted_epoch_s = std::numeric_limits<double>::infinity();  // encoded as null
  CHECK(proto::plan_refusal(p, 3, 2, c) ==
        "field 'predicted_epoch_s' must be a finite number >= 0, got null");
}

TEST_CASE("Proto.PlanRefusal.ChecksEveryRanksShare") {
  Settings c;
  c.global_batch = 4;
  Plan p;
  p.epoch = 3;
  p.global_batch = 4;
  p.batch = {3, 1};
  p.offset = {0, 3};
  p.throughput = {3, 1};
  CHECK(proto::plan_refusal(p, 3, 3, c) == "plan has 2 ranks, the job has 3");
  p.throughput[1] = std::numeric_limits<double>::infinity();  // only rank 1's share has it
  CHECK(proto::plan_refusal(p, 3, 2, c) ==
        "field 'throughput' must be a finite number >= 0, got null");
}
