// The numeric bounds of the protocol (lib/proto/checks.h): decode refuses every value outside
// its range with the exact message, and accepts the extremes inside it.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "lib/proto/checks.h"
#include "lib/proto/codec.h"
#include "lib/proto/share.h"

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

// plan_refusal's reference: every rank's share decoded and the plan assembled from them.
std::string refusal_by_decoding_every_share(const policy::Plan& plan, std::int64_t epoch, int world,
                                            const policy::Settings& config) {
  try {
    if (plan.world() != world || plan.offset.size() != plan.batch.size())
      return "plan has " + std::to_string(plan.world()) + " ranks, the job has " +
             std::to_string(world);
    const proto::PlanLines lines("j", plan);
    std::vector<proto::PlanMsg> got;
    std::vector<proto::Share> shares;
    for (int r = 0; r < world; ++r) {
      std::string line = lines.line(r);
      line.pop_back();
      const proto::Message m = proto::decode(line);
      got.push_back(std::get<proto::PlanMsg>(m));
      shares.push_back(proto::share_of(got.back()));
    }
    std::string why;
    const std::optional<policy::Plan> whole = proto::assemble(got.front(), shares, why);
    if (!whole) return "the shares do not assemble: " + why;
    return proto::plan_mismatch(*whole, epoch, world, config);
  } catch (const proto::ProtocolError& e) {
    return e.what();
  }
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
  nlohmann::json config = policy::to_json(policy::Settings{});
  config["samples_per_epoch"] = 9223372036854775807LL;
  CHECK(refusal(R"({"v":2,"type":"register","job":"j","token":"","rank":0,"world":1,"host":"h",)"
                R"("config":)" + config.dump() + "}") ==
        "field 'samples_per_epoch' must be an integer in [0, 1000000000000000], got "
        "9223372036854775807");
  policy::Plan p;
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
  policy::Settings c;
  c.global_batch = 4;
  policy::Plan p;
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
  policy::Settings c;
  c.global_batch = 4;
  policy::Plan p;
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

TEST_CASE("Proto.PlanRefusal.DecodesAsFewSharesAsTheReferenceDecodesAll") {
  // A rank's own fields at and past decode's bounds, on rank 1 of 3 (rank 0 is always
  // decoded, rank 2 is within bounds): plan_refusal and the reference must say the same, word
  // for word; only the plan with b_1 = 4 and o_1 = 4 can be accepted.
  constexpr double inf = std::numeric_limits<double>::infinity();
  const int g = 12;
  policy::Settings c;
  c.global_batch = g;
  const std::vector<int> batches = {std::numeric_limits<int>::min(), -1, 0, 1, 4, g - 1, g, g + 1,
                                    std::numeric_limits<int>::max()};
  const std::vector<double> throughputs = {0.0,
                                           -0.0,
                                           0.1,
                                           1.0 / 3,
                                           5e-324,
                                           2.2250738585072014e-308,
                                           123456789.123456789,
                                           std::numeric_limits<double>::max(),
                                           -5e-324,
                                           -1,
                                           inf,
                                           -inf,
                                           std::numeric_limits<double>::quiet_NaN()};
  int cases = 0, accepted = 0;
  for (const int b : batches) {
    for (const int o : {-1, 0, 4, g - b, g - b + 1}) {
      for (const double v : throughputs) {
        policy::Plan p;
        p.epoch = 3;
        p.global_batch = g;
        p.batch = {4, b, 4};
        p.offset = {0, o, 8};
        p.throughput = {2, v, 1};
        const std::string want = refusal_by_decoding_every_share(p, 3, 3, c);
        CAPTURE(b);
        CAPTURE(o);
        CAPTURE(v);
        CHECK(proto::plan_refusal(p, 3, 3, c) == want);
        CHECK(proto::share_decodes(p, 1) ==
              (want.find("field '") == std::string::npos));  // no decode refusal
        ++cases;
        accepted += want.empty() ? 1 : 0;
      }
    }
  }
  CHECK(cases == 9 * 5 * 13);
  CHECK(accepted > 0);
}

TEST_CASE("Proto.PlanRefusal.AnyFiniteThroughputReadsBackExactly") {
  // Ranks other than 0 are not decoded: their throughputs must read back bit for bit, or the
  // agents' shares would not assemble.
  std::mt19937_64 bits(7);
  policy::Settings c;
  c.global_batch = 64;
  policy::Plan p;
  p.epoch = 0;
  p.global_batch = 64;
  p.batch.assign(64, 1);
  p.offset = offsets_of(p.batch);
  for (int round = 0; round < 40; ++round) {
    p.throughput.clear();
    while (p.throughput.size() < 64) {
      const double v = std::bit_cast<double>(bits() >> 1);  // sign bit clear: >= 0 or NaN
      if (std::isfinite(v)) p.throughput.push_back(v);
    }
    CHECK(refusal_by_decoding_every_share(p, 0, 64, c) == "");
    CHECK(proto::plan_refusal(p, 0, 64, c) == "");
  }
}
