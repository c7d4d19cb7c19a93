#include "lib/proto/codec.h"

#include <charconv>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "lib/common/fields.h"
#include "lib/proto/checks.h"
#include "lib/proto/share.h"

namespace dbs::proto {

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

namespace {

// A line of text a rank says of itself (its host, how it waits): at most 255 bytes and no
// control characters, so that it shows as one line on the page, in logs and in a metric's label.
std::string line_of(const Fields& f, const char* key) {
  std::string s = f.string_or(key, "", 255);
  for (const char c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      f.fail("field '" + std::string(key) + "' must not contain control characters");
  return s;
}

// A job id: 1-64 of A-Z a-z 0-9 . _ -, not starting with '.'.
std::string job_of(const Fields& f) {
  std::string s = f.string("job", kMaxJobId);
  bool ok = !s.empty() && s[0] != '.';
  for (const char c : s) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    ok = ok && (alnum || c == '.' || c == '_' || c == '-');
  }
  if (!ok)
    f.fail("field 'job' must be 1 to " + std::to_string(kMaxJobId) +
           " of A-Z a-z 0-9 . _ - and not start with '.'");
  return s;
}

// A register's "auth": "munge:" and a munge credential (printable ASCII, no spaces).
std::string auth_of(const Fields& f) {
  std::string s = f.string("auth", kMaxAuth);
  const std::string_view scheme = kMungeScheme;
  bool ok = s.size() > scheme.size() && s.compare(0, scheme.size(), scheme) == 0;
  for (const char c : s) ok = ok && c > 0x20 && c < 0x7f;
  if (!ok) f.fail("field 'auth' must be \"munge:\" followed by a munge credential");
  return s;
}

// The hash as 16 hex digits (JSON numbers do not hold 64 bits everywhere).
std::string hex(std::uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::uint64_t hash_of(const Fields& f) {
  const std::string s = f.string("hash", 16);
  std::uint64_t h = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), h, 16);
  if (s.size() != 16 || ec != std::errc() || end != s.data() + s.size() || h == 0)
    f.fail("field 'hash' must be 16 hex digits, not all 0");
  return h;
}

json body(const RegisterMsg& m) {
  json j = {
      {"job", m.job}, {"token", m.token}, {"rank", m.rank}, {"world", m.world}, {"host", m.host}};
  if (m.config) j["config"] = policy::to_json(*m.config);
  if (!m.waiting.empty()) j["waiting"] = m.waiting;
  if (!m.auth.empty()) j["auth"] = m.auth;
  return j;
}

json body(const ReportMsg& m) {
  json j = policy::to_json(m.report);
  j["job"] = m.job;
  return j;
}

// "{"v":2,"type":"T","k":..." of type and body: the message without its closing "}\n".
std::string open_line(const char* type, const json& body) {
  std::string out =
      std::string("{\"v\":") + std::to_string(kVersion) + ",\"type\":\"" + type + "\"";
  if (body.empty()) return out;
  const std::string fields = body.dump(-1, ' ', false, json::error_handler_t::replace);
  return out + "," + fields.substr(1, fields.size() - 2);
}

// One value as open_line writes it: an invalid UTF-8 byte in a string becomes U+FFFD.
std::string value(const json& v) {
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

// A plan message: what every rank of the plan receives alike, then the rank's own fields. Both
// are written a field at a time, as open_line writes an object (keys in byte order), without
// building one: the daemon writes a head per plan and a tail per rank.
std::string plan_head(const std::string& job, std::int64_t epoch, int world, int global_batch,
                      double predicted, double ideal, bool changed, const std::string& reason,
                      std::uint64_t hash, double exchange) {
  std::string out = open_line("plan", json::object());
  out += changed ? ",\"changed\":true" : ",\"changed\":false";
  out += ",\"epoch\":" + std::to_string(epoch + 1);
  if (exchange > 0) out += ",\"exchange_epoch_s\":" + value(exchange);
  out += ",\"global_batch\":" + std::to_string(global_batch);
  out += ",\"hash\":\"" + hex(hash) + "\"";
  out += ",\"ideal_epoch_s\":" + value(ideal);
  out += ",\"job\":" + value(job);
  out += ",\"predicted_epoch_s\":" + value(predicted);
  out += ",\"reason\":" + value(reason);
  out += ",\"world\":" + std::to_string(world);
  return out;
}

// Appends the rank's own fields and the end of the line to `out`: at most kTailBytes (three
// integers of up to 11 characters and a number of up to 24, with their keys).
constexpr std::size_t kTailBytes = 128;

void append_tail(std::string& out, int rank, int batch, int offset, double throughput) {
  out += ",\"rank\":";
  out += std::to_string(rank);
  out += ",\"batch\":";
  out += std::to_string(batch);
  out += ",\"offset\":";
  out += std::to_string(offset);
  out += ",\"throughput\":";
  out += value(throughput);
  out += "}\n";
}

json body(const ErrorMsg& m) {
  return {{"code", m.code}, {"message", m.message}};
}

json body(const HeartbeatMsg&) {
  return json::object();
}

json body(const GoodbyeMsg& m) {
  return {{"done", m.done}};
}

constexpr const char* type_of(const Message& m) {
  constexpr const char* kTypes[] = {"register", "report", "plan", "error", "heartbeat", "goodbye"};
  return kTypes[m.index()];
}

RegisterMsg register_from(const Fields& f) {
  RegisterMsg m;
  m.job = job_of(f);
  m.token =
      f.has("token") ? f.string("token", 1024) : "";  // absent: the daemon says "missing token"
  m.world = f.small("world", 1, kMaxWorld);
  m.rank = f.small("rank", 0);
  check_rank(m.rank, m.world);
  f.need("host");  // required; "" is allowed
  m.host = line_of(f, "host");
  m.waiting = line_of(f, "waiting");
  if (f.has("auth")) m.auth = auth_of(f);
  if (f.has("config")) {
    m.config = policy::settings_from_json(f.object("config"));
    check_bounds(*m.config);
  }
  return m;
}

PlanMsg plan_from(const Fields& f) {
  PlanMsg m;
  m.job = job_of(f);
  m.epoch = f.integer("epoch", 1) - 1;
  m.world = f.small("world", 1, kMaxWorld);
  m.rank = f.small("rank", 0);
  check_rank(m.rank, m.world);
  m.global_batch = f.small("global_batch", 1);
  m.batch = f.small("batch", 0, m.global_batch);
  m.offset = f.small("offset", 0, m.global_batch - m.batch);
  m.throughput = f.number("throughput", 0);
  m.predicted_epoch_s = f.number("predicted_epoch_s", 0);
  m.ideal_epoch_s = f.number("ideal_epoch_s", 0);
  m.exchange_epoch_s = f.number_or("exchange_epoch_s", 0, 0);
  m.changed = f.boolean("changed");
  m.reason = f.string("reason", kMaxMessage);
  m.hash = hash_of(f);
  check_bounds(m);
  return m;
}

Message message_from(const Fields& f) {
  const json& v = f.need("v");
  if (!v.is_number_integer()) f.fail("field 'v' must be an integer, got " + describe(v));
  if (v.get<std::int64_t>() != kVersion)
    throw ProtocolError(ErrorCode::version, "unsupported protocol version " + v.dump() +
                                                " (expected " + std::to_string(kVersion) + ")");
  const std::string type = f.string("type", 64);
  if (type == "report") {
    ReportMsg m{job_of(f), policy::report_from_json(f)};
    check_bounds(m.report);
    return m;
  }
  if (type == "heartbeat") return HeartbeatMsg{};
  if (type == "register") return register_from(f);
  if (type == "plan") return plan_from(f);
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

}  // namespace

std::string encode(const Message& message) {
  return std::visit(
      [&message](const auto& m) -> std::string {
        if constexpr (std::is_same_v<std::decay_t<decltype(m)>, PlanMsg>) {
          std::string out =
              plan_head(m.job, m.epoch, m.world, m.global_batch, m.predicted_epoch_s,
                        m.ideal_epoch_s, m.changed, m.reason, m.hash, m.exchange_epoch_s);
          append_tail(out, m.rank, m.batch, m.offset, m.throughput);
          return out;
        } else {
          return open_line(type_of(message), body(m)) + "}\n";
        }
      },
      message);
}

PlanLines::PlanLines(const std::string& job, Plan plan)
    : plan_(std::move(plan)),
      hash_(plan_hash(plan_)),
      head_(plan_head(job, plan_.epoch, plan_.world(), plan_.global_batch, plan_.predicted_epoch_s,
                      plan_.ideal_epoch_s, plan_.changed, plan_.reason, hash_,
                      plan_.exchange_epoch_s)) {}

std::string PlanLines::line(int rank) const {
  const auto i = static_cast<std::size_t>(rank);
  std::string out;
  out.reserve(head_.size() + kTailBytes);
  out += head_;
  append_tail(out, rank, plan_.batch[i], plan_.offset[i],
              i < plan_.throughput.size() ? plan_.throughput[i] : 0.0);
  return out;
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
  try {
    return message_from(Fields(j));
  } catch (const FieldError& e) {
    throw ProtocolError(ErrorCode::invalid, e.what());
  }
}

}  // namespace dbs::proto
