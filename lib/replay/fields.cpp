#include "lib/replay/fields.h"

#include <cmath>
#include <limits>
#include <sstream>
#include <utility>

#include "lib/common/error.h"

namespace dbs::replay::detail {

using nlohmann::json;

namespace {

std::string shown(double x) {
  std::ostringstream os;
  os << x;
  return os.str();
}

}  // namespace

Fields::Fields(const json& j, std::string where, std::string what)
    : j_(j), where_(std::move(where)), what_(std::move(what)) {
  if (!j_.is_object()) fail("is not a JSON object");
}

void Fields::fail(const std::string& message) const {
  throw InputError(where_ + ": " + what_ + ": " + message);
}

void Fields::only(const std::vector<std::string>& known) const {
  for (const auto& [key, value] : j_.items()) {
    bool ok = false;
    for (const std::string& k : known) ok = ok || k == key;
    if (!ok) {
      std::string list;
      for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
      fail("unknown field '" + key + "' (known: " + list + ")");
    }
  }
}

const json& Fields::at(const char* key) const {
  const auto it = j_.find(key);
  if (it == j_.end()) fail(std::string("missing field '") + key + "'");
  return *it;
}

std::int64_t Fields::as_integer(const char* key, const json& v, std::int64_t lo,
                                std::int64_t hi) const {
  if (!v.is_number_integer()) fail(std::string("field '") + key + "' is not an integer");
  if (v.is_number_unsigned() &&
      v.get<std::uint64_t>() >
          static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    fail(std::string("field '") + key + "' is " + std::to_string(v.get<std::uint64_t>()) +
         ", outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  const std::int64_t x = v.get<std::int64_t>();
  if (x < lo || x > hi) {
    fail(std::string("field '") + key + "' is " + std::to_string(x) + ", outside [" +
         std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return x;
}

double Fields::as_number(const char* key, const json& v, double lo, double hi) const {
  if (!v.is_number()) fail(std::string("field '") + key + "' is not a number");
  const double x = v.get<double>();
  if (!std::isfinite(x) || x < lo || x > hi) {
    fail(std::string("field '") + key + "' is " + shown(x) + ", outside [" + shown(lo) + ", " +
         shown(hi) + "]");
  }
  return x;
}

std::int64_t Fields::integer(const char* key, std::int64_t lo, std::int64_t hi) const {
  return as_integer(key, at(key), lo, hi);
}

std::int64_t Fields::integer_or(const char* key, std::int64_t fallback, std::int64_t lo,
                                std::int64_t hi) const {
  return has(key) ? integer(key, lo, hi) : fallback;
}

double Fields::number(const char* key, double lo, double hi) const {
  return as_number(key, at(key), lo, hi);
}

double Fields::number_or(const char* key, double fallback, double lo, double hi) const {
  return has(key) ? number(key, lo, hi) : fallback;
}

std::string Fields::text(const char* key) const {
  const json& v = at(key);
  if (!v.is_string()) fail(std::string("field '") + key + "' is not a string");
  return v.get<std::string>();
}

std::string Fields::text_or(const char* key, const std::string& fallback) const {
  return has(key) ? text(key) : fallback;
}

bool Fields::boolean(const char* key) const {
  const json& v = at(key);
  if (!v.is_boolean()) fail(std::string("field '") + key + "' is not true or false");
  return v.get<bool>();
}

std::vector<int> Fields::integers(const char* key, int lo, int hi) const {
  const json& v = at(key);
  if (!v.is_array()) fail(std::string("field '") + key + "' is not an array");
  std::vector<int> out;
  out.reserve(v.size());
  for (const json& x : v) out.push_back(static_cast<int>(as_integer(key, x, lo, hi)));
  return out;
}

std::vector<double> Fields::numbers(const char* key, double lo, double hi) const {
  const json& v = at(key);
  if (!v.is_array()) fail(std::string("field '") + key + "' is not an array");
  std::vector<double> out;
  out.reserve(v.size());
  for (const json& x : v) out.push_back(as_number(key, x, lo, hi));
  return out;
}

std::string json_message(const std::exception& e) {
  std::string m = e.what();
  if (m.starts_with("[json.exception.")) {
    const auto end = m.find("] ");
    if (end != std::string::npos) m = m.substr(end + 2);
  }
  return m;
}

}  // namespace dbs::replay::detail
