#include "lib/proto/fields.h"

#include <cmath>

#include "lib/proto/protocol.h"

namespace dbs::proto::detail {

using nlohmann::json;

std::string describe(const json& value) {
  if (value.is_number()) return value.dump();
  return value.type_name();
}

void invalid(const std::string& message) {
  throw ProtocolError(ErrorCode::invalid, message);
}

namespace {

std::string field(const char* key) {
  return std::string("field '") + key + "'";
}

std::string range(std::int64_t lo, std::int64_t hi) {
  if (hi == std::numeric_limits<std::int64_t>::max()) return ">= " + std::to_string(lo);
  return "in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
}

// The value as an int64 if it is an integer that fits, else what is wrong.
bool as_integer(const json& v, std::int64_t& out) {
  if (v.is_number_integer() && !v.is_number_unsigned()) {
    out = v.get<std::int64_t>();
    return true;
  }
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return false;
    out = static_cast<std::int64_t>(u);
    return true;
  }
  return false;
}

}  // namespace

bool Fields::has(const char* key) const {
  return object_.contains(key);
}

const json& Fields::need(const char* key) const {
  const auto it = object_.find(key);
  if (it == object_.end()) invalid(std::string("missing field '") + key + "'");
  return *it;
}

std::int64_t Fields::integer(const char* key, std::int64_t lo, std::int64_t hi) const {
  const json& v = need(key);
  std::int64_t x = 0;
  if (!as_integer(v, x)) {
    if (v.is_number_unsigned())
      invalid(field(key) + " must be an integer " + range(lo, hi) + ", got " + describe(v));
    invalid(field(key) + " must be an integer, got " + describe(v));
  }
  if (x < lo || x > hi)
    invalid(field(key) + " must be an integer " + range(lo, hi) + ", got " + describe(v));
  return x;
}

int Fields::small(const char* key, int lo, int hi) const {
  return static_cast<int>(integer(key, lo, hi));
}

double Fields::time(const char* key) const {
  const json& v = need(key);
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
    invalid(field(key) + " must be a finite number >= 0, got " + describe(v));
  return v.get<double>();
}

double Fields::number(const char* key) const {
  const json& v = need(key);
  if (!v.is_number() || !std::isfinite(v.get<double>()))
    invalid(field(key) + " must be a finite number, got " + describe(v));
  return v.get<double>();
}

bool Fields::boolean(const char* key) const {
  const json& v = need(key);
  if (!v.is_boolean()) invalid(field(key) + " must be a boolean, got " + describe(v));
  return v.get<bool>();
}

std::string Fields::string(const char* key, std::size_t max_len) const {
  const json& v = need(key);
  if (!v.is_string()) invalid(field(key) + " must be a string, got " + describe(v));
  const auto& s = v.get_ref<const std::string&>();
  if (s.size() > max_len)
    invalid(field(key) + " must be at most " + std::to_string(max_len) + " characters, got " +
            std::to_string(s.size()));
  return s;
}

std::string Fields::job(const char* key) const {
  std::string s = string(key, kMaxJobId);
  bool ok = !s.empty() && s[0] != '.';
  for (const char c : s) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    ok = ok && (alnum || c == '.' || c == '_' || c == '-');
  }
  if (!ok)
    invalid(field(key) + " must be 1 to " + std::to_string(kMaxJobId) +
            " of A-Z a-z 0-9 . _ - and not start with '.'");
  return s;
}

std::vector<int> Fields::ints(const char* key, int lo) const {
  const json& v = need(key);
  if (!v.is_array()) invalid(field(key) + " must be an array, got " + describe(v));
  std::vector<int> out;
  out.reserve(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::int64_t x = 0;
    if (!as_integer(v[i], x) || x < lo || x > std::numeric_limits<int>::max())
      invalid(field(key) + " item " + std::to_string(i) + " must be an integer " +
              range(lo, std::numeric_limits<int>::max()) + ", got " + describe(v[i]));
    out.push_back(static_cast<int>(x));
  }
  return out;
}

std::vector<double> Fields::times(const char* key) const {
  const json& v = need(key);
  if (!v.is_array()) invalid(field(key) + " must be an array, got " + describe(v));
  std::vector<double> out;
  out.reserve(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const json& x = v[i];
    if (!x.is_number() || !std::isfinite(x.get<double>()) || x.get<double>() < 0)
      invalid(field(key) + " item " + std::to_string(i) + " must be a finite number >= 0, got " +
              describe(x));
    out.push_back(x.get<double>());
  }
  return out;
}

const json& Fields::object(const char* key) const {
  const json& v = need(key);
  if (!v.is_object()) invalid(field(key) + " must be an object, got " + describe(v));
  return v;
}

}  // namespace dbs::proto::detail
