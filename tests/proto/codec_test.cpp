// lib/proto codec: every message round-trips, and every rejection has its exact message.
#include "lib/proto/codec.h"
#include "lib/proto/checks.h"
#include "lib/proto/share.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "tests/policy/sample_plan.h"

namespace {

using namespace dbs::proto;
using dbs::test::sample_plan;

dbs::Report sample_report() {
  dbs::Report r;
  r.rank = 1;
  r.epoch = 4;
  r.batch = 61;
  r.samples = 7808;
  r.steps = 128;
  r.compute_s = 1.2345678901234567;
  r.comm_s = 0.1;
  r.step_rate_median = 6400.5;
  return r;
}

// Rank 1's share of sample_plan().
PlanMsg sample_share() {
  const dbs::Plan p = sample_plan();
  return share_of("job-1", p, 1, plan_hash(p));
}

// The ProtocolError of decoding `line`, as "code: message".
std::string rejection(const std::string& line) {
  try {
    decode(line);
  } catch (const ProtocolError& e) {
    return std::string(name(e.code())) + ": " + e.what();
  }
  return "accepted";
}

std::string report_with(const std::string& field, const std::string& value) {
  nlohmann::json j = nlohmann::json::parse(encode(ReportMsg{"job-1", sample_report()}));
  if (value.empty()) {
    j.erase(field);
  } else {
    j[field] = nlohmann::json::parse(value);
  }
  return j.dump();
}

template <typename T>
void round_trips(const T& message) {
  const std::string line = encode(message);
  REQUIRE(line.back() == '\n');
  CHECK(line.find('\n') == line.size() - 1);
  const Message back = decode(std::string_view(line).substr(0, line.size() - 1));
  REQUIRE(std::holds_alternative<T>(back));
  CHECK(std::get<T>(back) == message);
}

}  // namespace

TEST_CASE("Proto.RoundTrip.EveryMessage") {
  RegisterMsg reg{"slurm-4711", "secret-token-0123456789", 3, 4, "node03",
                  dbs::Settings{}, "", ""};
  reg.config->policy = dbs::parse_policy("fixed:32,32,32,32");
  reg.config->samples_per_epoch = 60000;
  reg.config->rebalance_every = 12;
  round_trips(reg);
  RegisterMsg join = reg;
  join.config.reset();
  round_trips(join);
  reg.waiting = "sleep (auto: CPU quota of 0.33 core(s) for 1 thread(s))";
  round_trips(reg);
  reg.auth = "munge:MUNGE:AwQFAAD1k1Zcq0Xu+o7x/9Q=:";
  round_trips(reg);
  round_trips(ReportMsg{"job-1", sample_report()});
  round_trips(sample_share());
  round_trips(ErrorMsg{"auth", "invalid token"});
  round_trips(HeartbeatMsg{});
  round_trips(GoodbyeMsg{true});
  round_trips(GoodbyeMsg{false});
}

TEST_CASE("Proto.RoundTrip.ExtremeNumbersSurviveExactly") {
  dbs::Report r = sample_report();
  r.compute_s = std::nextafter(dbs::proto::kMinFigure, 1.0);  // the extremes of the bounds
  r.comm_s = std::nextafter(dbs::proto::kMaxFigure, 0.0);
  r.step_rate_median = 0.1 + 0.2;
  r.samples = dbs::proto::kMaxSamples;
  round_trips(ReportMsg{"j", r});
}

TEST_CASE("Proto.Encode.ControlCharactersStayInsideOneLine") {
  PlanMsg m = sample_share();
  m.reason = "line\nbreak\ttab\x01\x1f end";
  const std::string line = encode(m);
  CHECK(line.find('\n') == line.size() - 1);
  CHECK(line.find("line\\nbreak\\ttab\\u0001\\u001f end") != std::string::npos);
  round_trips(m);
}

TEST_CASE("Proto.Encode.EpochsCountFromOneOnTheWire") {
  const auto j = nlohmann::json::parse(encode(ReportMsg{"j", sample_report()}));
  CHECK(j["epoch"] == 5);
  CHECK(j["v"] == kVersion);
  CHECK(j["type"] == "report");
  CHECK(nlohmann::json::parse(encode(sample_share()))["epoch"] == 4);
}

TEST_CASE("Proto.Decode.UnknownFieldsAreIgnored") {
  CHECK(rejection(R"({"v":2,"type":"heartbeat","extra":[1,2,{"x":null}]})") == "accepted");
}

TEST_CASE("Proto.Reject.MalformedJson") {
  CHECK(rejection("{\"v\":2,") == "malformed: malformed JSON at byte 8");
  CHECK(rejection("nonsense") == "malformed: malformed JSON at byte 2");
  CHECK(rejection("{\"v\":2} trailing") == "malformed: malformed JSON at byte 11");
  CHECK(rejection("{\"v\":1e400}") == "malformed: malformed JSON: number out of range");
  CHECK(rejection("{\"s\":\"\xff\"}") == "malformed: malformed JSON at byte 7");
  CHECK(rejection("[1,2]") == "malformed: message is not a JSON object");
  CHECK(rejection("42") == "malformed: message is not a JSON object");
}

TEST_CASE("Proto.Reject.VersionAndType") {
  CHECK(rejection(R"({"type":"heartbeat"})") == "invalid: missing field 'v'");
  CHECK(rejection(R"({"v":"1","type":"heartbeat"})") ==
        "invalid: field 'v' must be an integer, got string");
  CHECK(rejection(R"({"v":3,"type":"heartbeat"})") ==
        "version: unsupported protocol version 3 (expected 2)");
  CHECK(rejection(R"({"v":0,"type":"heartbeat"})") ==
        "version: unsupported protocol version 0 (expected 2)");
  CHECK(rejection(R"({"v":2})") == "invalid: missing field 'type'");
  CHECK(rejection(R"({"v":2,"type":7})") == "invalid: field 'type' must be a string, got 7");
  CHECK(rejection(R"({"v":2,"type":"hello"})") == "unknown_type: unknown message type 'hello'");
  CHECK(rejection(R"({"v":2,"type":"<script>"})") == "unknown_type: unknown message type");
}

TEST_CASE("Proto.Reject.WrongTypes") {
  CHECK(rejection(report_with("rank", "\"1\"")) ==
        "invalid: field 'rank' must be an integer, got string");
  CHECK(rejection(report_with("rank", "1.5")) ==
        "invalid: field 'rank' must be an integer, got 1.5");
  CHECK(rejection(report_with("samples", "true")) ==
        "invalid: field 'samples' must be an integer, got boolean");
  CHECK(rejection(report_with("compute_s", "\"fast\"")) ==
        "invalid: field 'compute_s' must be a finite number >= 0, got string");
  CHECK(rejection(report_with("job", "[]")) == "invalid: field 'job' must be a string, got array");
  CHECK(rejection(R"({"v":2,"type":"goodbye","done":1})") ==
        "invalid: field 'done' must be a boolean, got 1");
}

TEST_CASE("Proto.Reject.MissingFields") {
  for (const char* f : {"job", "rank", "epoch", "batch", "samples", "steps", "compute_s", "comm_s",
                        "step_rate_median"}) {
    CAPTURE(f);
    CHECK(rejection(report_with(f, "")) == std::string("invalid: missing field '") + f + "'");
  }
}

TEST_CASE("Proto.Reject.NanAndNegativeTimes") {
  // JSON has no NaN: an encoder writes null, which is refused.
  dbs::Report r = sample_report();
  r.compute_s = std::nan("");
  const std::string nan_line = encode(ReportMsg{"j", r});
  CHECK(rejection(nan_line.substr(0, nan_line.size() - 1)) ==
        "invalid: field 'compute_s' must be a finite number >= 0, got null");
  CHECK(rejection(report_with("comm_s", "-0.5")) ==
        "invalid: field 'comm_s' must be a finite number >= 0, got -0.5");
  CHECK(rejection(report_with("step_rate_median", "-1")) ==
        "invalid: field 'step_rate_median' must be a finite number >= 0, got -1");
  CHECK(rejection(report_with("samples", "-3")) ==
        "invalid: field 'samples' must be an integer >= 0, got -3");
  CHECK(rejection(report_with("epoch", "0")) ==
        "invalid: field 'epoch' must be an integer >= 1, got 0");
}

TEST_CASE("Proto.Reject.RegisterFields") {
  const auto reg = [](const std::string& rank, const std::string& world, const std::string& job) {
    return R"({"v":2,"type":"register","job":)" + job + R"(,"token":"t","rank":)" + rank +
           R"(,"world":)" + world + R"(,"host":"h"})";
  };
  CHECK(rejection(reg("2", "2", "\"j\"")) == "invalid: rank 2 out of range for a job of 2 ranks");
  CHECK(rejection(reg("-1", "2", "\"j\"")) ==
        "invalid: field 'rank' must be an integer in [0, 2147483647], got -1");
  CHECK(rejection(reg("0", "0", "\"j\"")) ==
        "invalid: field 'world' must be an integer in [1, 1000000], got 0");
  CHECK(rejection(reg("0", "1", "\"../etc\"")) ==
        "invalid: field 'job' must be 1 to 64 of A-Z a-z 0-9 . _ - and not start with '.'");
  CHECK(rejection(reg("0", "1", "\"\"")) ==
        "invalid: field 'job' must be 1 to 64 of A-Z a-z 0-9 . _ - and not start with '.'");
  CHECK(rejection(reg("0", "1", "\"" + std::string(65, 'a') + "\"")) ==
        "invalid: field 'job' must be at most 64 characters, got 65");
  // No token field at all is the daemon's business ("missing token"), not a decoding error.
  CHECK(rejection(R"({"v":2,"type":"register","job":"j","rank":0,"world":1,"host":"h"})") ==
        "accepted");
  const std::string bad_config =
      R"({"v":2,"type":"register","job":"j","rank":0,"world":1,"host":"h","config":{"policy":"dbs",)"
      R"("global_batch":128,"samples_per_epoch":10,"min_batch":1,"max_batch":0,"min_gain":1.5}})";
  CHECK(rejection(bad_config) == "invalid: field 'min_gain' must be a number in [0, 1), got 1.5");
  CHECK(rejection(
            R"({"v":2,"type":"register","job":"j","rank":0,"world":1,"host":"h","config":3})") ==
        "invalid: field 'config' must be an object, got 3");
  // "waiting" is optional; where given, a string of at most 255 characters.
  const std::string head = R"({"v":2,"type":"register","job":"j","rank":0,"world":1,"host":"h")";
  CHECK(rejection(head + R"x(,"waiting":"spin (auto: no CPU quota)"})x") == "accepted");
  CHECK(rejection(head + R"(,"waiting":1})") ==
        "invalid: field 'waiting' must be a string, got 1");
  CHECK(rejection(head + R"(,"waiting":")" + std::string(256, 'w') + "\"}") ==
        "invalid: field 'waiting' must be at most 255 characters, got 256");
  // Both are one line of text: shown on the page, in logs and as a metric's label.
  CHECK(rejection(head + R"(,"waiting":"spin\nsleep"})") ==
        "invalid: field 'waiting' must not contain control characters");
  CHECK(rejection(R"({"v":2,"type":"register","job":"j","rank":0,"world":1,"host":"a\u0007b"})") ==
        "invalid: field 'host' must not contain control characters");
  CHECK(rejection(R"({"v":2,"type":"register","job":"j","rank":0,"world":1})") ==
        "invalid: missing field 'host'");
  CHECK(rejection(head + R"x(,"waiting":"sleep (\"quoted\", ünïcode)"})x") == "accepted");
}

TEST_CASE("Proto.Reject.RegisterAuth") {
  const std::string head = R"({"v":2,"type":"register","job":"j","rank":0,"world":1,"host":"h")";
  CHECK(rejection(head + R"(,"auth":"munge:MUNGE:AwQDAACx+/9Q=:"})") == "accepted");
  const std::string wrong = "invalid: field 'auth' must be \"munge:\" followed by a munge credential";
  CHECK(rejection(head + R"(,"auth":"munge:"})") == wrong);       // no credential
  CHECK(rejection(head + R"(,"auth":"token:abc"})") == wrong);    // another scheme
  CHECK(rejection(head + R"(,"auth":"munge:MUNGE: x"})") == wrong);  // a space
  CHECK(rejection(head + R"(,"auth":"munge:a\u0000b"})") == wrong);
  CHECK(rejection(head + R"(,"auth":7})") == "invalid: field 'auth' must be a string, got 7");
  CHECK(rejection(head + R"(,"auth":"munge:)" + std::string(4091, 'A') + "\"}") ==
        "invalid: field 'auth' must be at most 4096 characters, got 4097");
  // Encoded only when set: an old daemon sees the register it knows.
  RegisterMsg r{"j", "", 0, 1, "h", std::nullopt, "", ""};
  CHECK(encode(r).find("auth") == std::string::npos);
}

TEST_CASE("Proto.PlanMessage.IsOneRanksShare") {
  const auto j = nlohmann::json::parse(encode(sample_share()));
  CHECK(j["rank"] == 1);
  CHECK(j["world"] == 2);
  CHECK(j["batch"] == 43);
  CHECK(j["offset"] == 85);
  CHECK(j["throughput"] == 2512.125);
  CHECK(j["hash"].get<std::string>().size() == 16);
  // O(1) in the world size: a share of a 10,000-rank plan is as long as one of a 2-rank plan.
  dbs::Plan big = sample_plan();
  big.batch.assign(10000, 1);
  big.offset = dbs::offsets_of(big.batch);
  big.throughput.assign(10000, 5000.25);
  big.global_batch = 10000;
  CHECK(encode(share_of("job-1", big, 9999, plan_hash(big))).size() < 400);
}

TEST_CASE("Proto.PlanLines.WriteWhatEncodeWrites") {
  const dbs::Plan p = sample_plan();
  const PlanLines lines("job-1", p);
  for (int r = 0; r < 2; ++r) CHECK(lines.line(r) == encode(share_of("job-1", p, r, plan_hash(p))));
}

TEST_CASE("Proto.PlanLines.WriteTheWireFormByteForByte") {
  // Keys after "v" and "type" in byte order, then the rank's own four; numbers as nlohmann
  // writes them; the reason escaped, raw UTF-8 kept and an invalid byte replaced by U+FFFD.
  dbs::Plan p;
  p.epoch = 2;
  p.global_batch = 4;
  p.batch = {3, 1};
  p.offset = {0, 3};
  p.throughput = {3, 1.5};
  p.predicted_epoch_s = 2.5;
  p.ideal_epoch_s = 2.0;
  p.changed = true;
  p.reason = "rebalanced: \"x\" \xc3\xa9\x01\xff\\";
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(plan_hash(p)));
  CHECK(PlanLines("job-1", p).line(1) ==
        std::string(R"({"v":2,"type":"plan","changed":true,"epoch":3,"global_batch":4,"hash":")") +
            hash +
            R"(","ideal_epoch_s":2.0,"job":"job-1","predicted_epoch_s":2.5,)"
            "\"reason\":\"rebalanced: \\\"x\\\" \xc3\xa9\\u0001\xef\xbf\xbd\\\\\","
            R"("world":2,"rank":1,"batch":1,"offset":3,"throughput":1.5})"
            "\n");
}

TEST_CASE("Proto.Reject.InconsistentPlanShares") {
  auto plan_with = [](const std::string& field, const std::string& value) {
    nlohmann::json j = nlohmann::json::parse(encode(sample_share()));
    j[field] = nlohmann::json::parse(value);
    return j.dump();
  };
  CHECK(rejection(plan_with("batch", "129")) ==
        "invalid: field 'batch' must be an integer in [0, 128], got 129");
  CHECK(rejection(plan_with("offset", "86")) ==
        "invalid: field 'offset' must be an integer in [0, 85], got 86");
  CHECK(rejection(plan_with("rank", "2")) == "invalid: rank 2 out of range for a job of 2 ranks");
  CHECK(rejection(plan_with("throughput", "null")) ==
        "invalid: field 'throughput' must be a finite number >= 0, got null");
  CHECK(rejection(plan_with("hash", "\"12\"")) ==
        "invalid: field 'hash' must be 16 hex digits, not all 0");
  CHECK(rejection(plan_with("hash", "\"000000000000000g\"")) ==
        "invalid: field 'hash' must be 16 hex digits, not all 0");
  CHECK(rejection(plan_with("hash", "\"0000000000000000\"")) ==
        "invalid: field 'hash' must be 16 hex digits, not all 0");
}

TEST_CASE("Proto.EncodeError.IsAnErrorMessage") {
  const std::string line = encode_error(ErrorCode::auth, "invalid token");
  const Message m = decode(std::string_view(line).substr(0, line.size() - 1));
  CHECK(std::get<ErrorMsg>(m) == ErrorMsg{"auth", "invalid token"});
}
