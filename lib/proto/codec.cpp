#include "lib/proto/codec.h"

#include <type_traits>

#include "lib/proto/checks.h"
#include "lib/proto/fields.h"
#include "lib/proto/writer.h"

namespace dbs::proto {

using detail::Fields;
using detail::invalid;
using detail::Writer;
using nlohmann::json;

const char* name(ErrorCode code) {
  switch (code) {
    case ErrorCode::malformed:
      return "malformed";
    case ErrorCode::invalid:
      return "invalid";
    case ErrorCode::version:
      return "version";
    case ErrorCode::unknown_type:
      return "unknown_type";
    case ErrorCode::too_long:
      return "too_long";
    case ErrorCode::auth:
      return "auth";
    case ErrorCode::unknown_job:
      return "unknown_job";
    case ErrorCode::conflict:
      return "conflict";
    case ErrorCode::state:
      return "state";
    case ErrorCode::timeout:
      return "timeout";
    case ErrorCode::limit:
      return "limit";
    case ErrorCode::shutdown:
      return "shutdown";
  }
  return "invalid";
}

policy::PolicyConfig JobConfig::policy_config(int world) const {
  policy::PolicyConfig c;
  c.world = world;
  c.global_batch = global_batch;
  c.samples_per_epoch = samples_per_epoch;
  c.min_batch = min_batch;
  c.max_batch = max_batch;
  c.min_gain = min_gain;
  return c;
}

JobConfig job_config(const std::string& policy, const policy::PolicyConfig& c) {
  return {policy, c.global_batch, c.samples_per_epoch, c.min_batch, c.max_batch, c.min_gain};
}

bool operator==(const ReportMsg& a, const ReportMsg& b) {
  const policy::Report &x = a.report, &y = b.report;
  return a.job == b.job && x.rank == y.rank && x.epoch == y.epoch && x.batch == y.batch &&
         x.samples == y.samples && x.compute_s == y.compute_s && x.comm_s == y.comm_s &&
         x.step_rate_median == y.step_rate_median && x.steps == y.steps;
}

json config_json(const JobConfig& c) {
  return {{"policy", c.policy},
          {"global_batch", c.global_batch},
          {"samples_per_epoch", c.samples_per_epoch},
          {"min_batch", c.min_batch},
          {"max_batch", c.max_batch},
          {"min_gain", c.min_gain}};
}

JobConfig config_from_json(const json& j) {
  if (!j.is_object()) invalid("field 'config' must be an object, got " + detail::describe(j));
  const Fields f(j);
  JobConfig c;
  c.policy = f.string("policy", kMaxMessage);
  c.global_batch = f.small("global_batch", 1);
  c.samples_per_epoch = f.integer("samples_per_epoch", 0);
  c.min_batch = f.small("min_batch", 1);
  c.max_batch = f.small("max_batch", 0);
  c.min_gain = f.number("min_gain");
  if (c.min_gain < 0 || c.min_gain >= 1)
    invalid("field 'min_gain' must be a number in [0, 1), got " + detail::describe(j["min_gain"]));
  check_bounds(c);
  return c;
}

json plan_json(const policy::Plan& p) {
  return {{"epoch", p.epoch + 1},
          {"global_batch", p.global_batch},
          {"batch", p.batch},
          {"offset", p.offset},
          {"throughput", p.throughput},
          {"predicted_epoch_s", p.predicted_epoch_s},
          {"ideal_epoch_s", p.ideal_epoch_s},
          {"changed", p.changed},
          {"reason", p.reason}};
}

policy::Plan plan_from_json(const json& j) {
  const Fields f(j);
  policy::Plan p;
  p.epoch = f.integer("epoch", 1) - 1;
  p.global_batch = f.small("global_batch", 1);
  p.batch = f.ints("batch", 0);
  p.offset = f.ints("offset", 0);
  p.throughput = f.times("throughput");
  p.predicted_epoch_s = f.time("predicted_epoch_s");
  p.ideal_epoch_s = f.time("ideal_epoch_s");
  p.changed = f.boolean("changed");
  p.reason = f.string("reason", kMaxMessage);
  if (p.batch.empty() || p.offset.size() != p.batch.size() || p.throughput.size() != p.batch.size())
    invalid("plan has " + std::to_string(p.batch.size()) + " batch sizes, " +
            std::to_string(p.offset.size()) + " offsets and " +
            std::to_string(p.throughput.size()) + " throughputs");
  std::int64_t sum = 0;
  for (const int b : p.batch) sum += b;
  if (sum != p.global_batch)
    invalid("plan batch sizes sum to " + std::to_string(sum) + ", not its global batch " +
            std::to_string(p.global_batch));
  if (p.offset != policy::offsets_of(p.batch))
    invalid("plan offsets do not follow from its batch sizes");
  check_bounds(p);
  return p;
}

json report_json(const policy::Report& r) {
  return {{"rank", r.rank},     {"epoch", r.epoch + 1},
          {"batch", r.batch},   {"samples", r.samples},
          {"steps", r.steps},   {"compute_s", r.compute_s},
          {"comm_s", r.comm_s}, {"step_rate_median", r.step_rate_median}};
}

policy::Report report_from_json(const json& j) {
  const Fields f(j);
  policy::Report r;
  r.rank = f.small("rank", 0);
  r.epoch = f.integer("epoch", 1) - 1;
  r.batch = f.small("batch", 0);
  r.samples = f.integer("samples", 0);
  r.steps = f.integer("steps", 0);
  r.compute_s = f.time("compute_s");
  r.comm_s = f.time("comm_s");
  r.step_rate_median = f.time("step_rate_median");
  check_bounds(r);
  return r;
}

namespace {

// Every message starts with its version and type.
Writer head(const char* type) {
  Writer w;
  w.field("v", kVersion).field("type", type);
  return w;
}

std::string line_of(const RegisterMsg& m) {
  Writer w = head("register");
  w.field("job", m.job)
      .field("token", m.token)
      .field("rank", m.rank)
      .field("world", m.world)
      .field("host", m.host);
  if (m.config) {
    const JobConfig& c = *m.config;
    std::string config = Writer()
                             .field("policy", c.policy)
                             .field("global_batch", c.global_batch)
                             .field("samples_per_epoch", c.samples_per_epoch)
                             .field("min_batch", c.min_batch)
                             .field("max_batch", c.max_batch)
                             .field("min_gain", c.min_gain)
                             .line();
    config.pop_back();  // the newline
    w.raw("config", config);
  }
  return w.line();
}

std::string line_of(const ReportMsg& m) {
  const policy::Report& r = m.report;
  return head("report")
      .field("job", m.job)
      .field("rank", r.rank)
      .field("epoch", r.epoch + 1)
      .field("batch", r.batch)
      .field("samples", r.samples)
      .field("steps", r.steps)
      .field("compute_s", r.compute_s)
      .field("comm_s", r.comm_s)
      .field("step_rate_median", r.step_rate_median)
      .line();
}

std::string line_of(const PlanMsg& m) {
  const policy::Plan& p = m.plan;
  return head("plan")
      .field("job", m.job)
      .field("epoch", p.epoch + 1)
      .field("global_batch", p.global_batch)
      .field("batch", p.batch)
      .field("offset", p.offset)
      .field("throughput", p.throughput)
      .field("predicted_epoch_s", p.predicted_epoch_s)
      .field("ideal_epoch_s", p.ideal_epoch_s)
      .field("changed", p.changed)
      .field("reason", p.reason)
      .line();
}

std::string line_of(const ErrorMsg& m) {
  return head("error").field("code", m.code).field("message", m.message).line();
}

std::string line_of(const HeartbeatMsg&) {
  return head("heartbeat").line();
}

std::string line_of(const GoodbyeMsg& m) {
  return head("goodbye").field("done", m.done).line();
}

RegisterMsg register_from(const Fields& f) {
  RegisterMsg m;
  m.job = f.job("job");
  m.token =
      f.has("token") ? f.string("token", 1024) : "";  // absent: the daemon says "missing token"
  m.world = f.small("world", 1, kMaxWorld);
  m.rank = f.small("rank", 0);
  check_rank(m.rank, m.world);
  m.host = f.string("host", 255);
  if (f.has("config")) m.config = config_from_json(f.object("config"));
  return m;
}

}  // namespace

std::string encode(const Message& message) {
  return std::visit([](const auto& m) { return line_of(m); }, message);
}

std::string encode_error(ErrorCode code, const std::string& message) {
  return encode(ErrorMsg{name(code), message});
}

Message decode(std::string_view line) {
  json j;
  try {
    j = json::parse(line.begin(), line.end());
  } catch (const json::parse_error& e) {
    throw ProtocolError(ErrorCode::malformed, "malformed JSON at byte " + std::to_string(e.byte));
  } catch (const json::exception&) {
    throw ProtocolError(ErrorCode::malformed, "malformed JSON: number out of range");
  }
  if (!j.is_object()) throw ProtocolError(ErrorCode::malformed, "message is not a JSON object");
  const Fields f(j);
  const json& v = f.need("v");
  if (!v.is_number_integer()) invalid("field 'v' must be an integer, got " + detail::describe(v));
  if (v.get<std::int64_t>() != kVersion)
    throw ProtocolError(ErrorCode::version, "unsupported protocol version " + v.dump() +
                                                " (expected " + std::to_string(kVersion) + ")");
  const std::string type = f.string("type", 64);
  if (type == "report") return ReportMsg{f.job("job"), report_from_json(j)};
  if (type == "heartbeat") return HeartbeatMsg{};
  if (type == "register") return register_from(f);
  if (type == "plan") return PlanMsg{f.job("job"), plan_from_json(j)};
  if (type == "goodbye") return GoodbyeMsg{f.boolean("done")};
  if (type == "error") return ErrorMsg{f.string("code", 64), f.string("message", kMaxMessage)};
  // The type is echoed only when it is a plain word.
  const bool plain =
      !type.empty() &&
      type.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") ==
          std::string::npos;
  throw ProtocolError(ErrorCode::unknown_type,
                      plain ? "unknown message type '" + type + "'" : "unknown message type");
}

}  // namespace dbs::proto
