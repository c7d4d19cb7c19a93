#include "lib/common/fields.h"

#include <cmath>
#include <sstream>

namespace dbs {

using nlohmann::json;

namespace {

std::string field(const char* key) {
  return std::string("field '") + key + "'";
}

std::string shown(double x) {
  std::ostringstream os;
  os << x;
  return os.str();
}

std::string range(std::int64_t lo, std::int64_t hi) {
  if (hi == Fields::kMax) return ">= " + std::to_string(lo);
  return "in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
}

std::string range(double lo, double hi) {
  if (lo == -Fields::kHuge && hi == Fields::kHuge) return "";
  if (hi == Fields::kHuge) return " >= " + shown(lo);
  return " in [" + shown(lo) + ", " + shown(hi) + "]";
}

}  // namespace

std::string describe(const json& value) {
  if (value.is_number()) return value.dump();
  return value.type_name();
}

std::string json_message(const std::exception& e) {
  std::string m = e.what();
  if (m.starts_with("[json.exception.")) {
    const auto end = m.find("] ");
    if (end != std::string::npos) m = m.substr(end + 2);
  }
  return m;
}

Fields::Fields(const json& j, std::string where) : j_(j), where_(std::move(where)) {
  if (!j_.is_object()) fail("is not a JSON object");
}

void Fields::fail(const std::string& message) const {
  throw FieldError(where_.empty() ? message : where_ + ": " + message);
}

void Fields::only(std::initializer_list<const char*> known) const {
  for (const auto& [key, value] : j_.items()) {
    bool ok = false;
    for (const char* k : known) ok = ok || key == k;
    if (ok) continue;
    std::string list;
    for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    fail("unknown field '" + key + "' (known: " + list + ")");
  }
}

const json& Fields::need(const char* key) const {
  const auto it = j_.find(key);
  if (it == j_.end()) fail(std::string("missing field '") + key + "'");
  return *it;
}

std::int64_t Fields::as_integer(const std::string& name, const json& v, std::int64_t lo,
                                std::int64_t hi) const {
  if (!v.is_number_integer()) fail(name + " must be an integer, got " + describe(v));
  const bool too_big =
      v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(kMax);
  const std::int64_t x = too_big ? kMax : v.get<std::int64_t>();
  if (too_big || x < lo || x > hi)
    fail(name + " must be an integer " + range(lo, hi) + ", got " + describe(v));
  return x;
}

double Fields::as_number(const std::string& name, const json& v, double lo, double hi) const {
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < lo ||
      v.get<double>() > hi)
    fail(name + " must be a finite number" + range(lo, hi) + ", got " + describe(v));
  return v.get<double>();
}

std::int64_t Fields::integer(const char* key, std::int64_t lo, std::int64_t hi) const {
  return as_integer(field(key), need(key), lo, hi);
}

std::int64_t Fields::integer_or(const char* key, std::int64_t fallback, std::int64_t lo,
                                std::int64_t hi) const {
  return has(key) ? integer(key, lo, hi) : fallback;
}

int Fields::small(const char* key, int lo, int hi) const {
  return static_cast<int>(integer(key, lo, hi));
}

double Fields::number(const char* key, double lo, double hi) const {
  return as_number(field(key), need(key), lo, hi);
}

double Fields::number_or(const char* key, double fallback, double lo, double hi) const {
  return has(key) ? number(key, lo, hi) : fallback;
}

bool Fields::boolean(const char* key) const {
  const json& v = need(key);
  if (!v.is_boolean()) fail(field(key) + " must be a boolean, got " + describe(v));
  return v.get<bool>();
}

std::string Fields::string(const char* key, std::size_t max_len) const {
  const json& v = need(key);
  if (!v.is_string()) fail(field(key) + " must be a string, got " + describe(v));
  const auto& s = v.get_ref<const std::string&>();
  if (s.size() > max_len)
    fail(field(key) + " must be at most " + std::to_string(max_len) + " characters, got " +
         std::to_string(s.size()));
  return s;
}

std::string Fields::string_or(const char* key, const std::string& fallback,
                              std::size_t max_len) const {
  return has(key) ? string(key, max_len) : fallback;
}

std::vector<int> Fields::ints(const char* key, int lo, int hi) const {
  const json& v = need(key);
  if (!v.is_array()) fail(field(key) + " must be an array, got " + describe(v));
  std::vector<int> out;
  out.reserve(v.size());
  for (std::size_t i = 0; i < v.size(); ++i)
    out.push_back(
        static_cast<int>(as_integer(field(key) + " item " + std::to_string(i), v[i], lo, hi)));
  return out;
}

std::vector<double> Fields::numbers(const char* key, double lo, double hi) const {
  const json& v = need(key);
  if (!v.is_array()) fail(field(key) + " must be an array, got " + describe(v));
  std::vector<double> out;
  out.reserve(v.size());
  for (std::size_t i = 0; i < v.size(); ++i)
    out.push_back(as_number(field(key) + " item " + std::to_string(i), v[i], lo, hi));
  return out;
}

Fields Fields::object(const char* key) const {
  const json& v = need(key);
  if (!v.is_object()) fail(field(key) + " must be an object, got " + describe(v));
  return Fields(v, where_);
}

}  // namespace dbs
