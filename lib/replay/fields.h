// Typed access to the fields of one JSON record, with errors that name the place ("FILE:LINE"
// or "FILE"), the record and the field. Internal to lib/replay (trace reader, synthetic specs).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace dbs::replay::detail {

class Fields {
 public:
  // where: "FILE:LINE" or "FILE"; what: "rank record", "spec", ...
  Fields(const nlohmann::json& j, std::string where, std::string what);

  bool has(const char* key) const { return j_.contains(key); }
  // Fails on the first key not in `known` (a misspelt field is not silently ignored).
  void only(const std::vector<std::string>& known) const;
  const nlohmann::json& at(const char* key) const;  // throws when missing
  std::int64_t integer(const char* key, std::int64_t lo, std::int64_t hi) const;
  std::int64_t integer_or(const char* key, std::int64_t fallback, std::int64_t lo,
                          std::int64_t hi) const;
  // A finite number in [lo, hi].
  double number(const char* key, double lo, double hi) const;
  double number_or(const char* key, double fallback, double lo, double hi) const;
  std::string text(const char* key) const;
  std::string text_or(const char* key, const std::string& fallback) const;
  bool boolean(const char* key) const;
  std::vector<int> integers(const char* key, int lo, int hi) const;
  std::vector<double> numbers(const char* key, double lo, double hi) const;

  // Throws InputError "<where>: <what>: <message>".
  [[noreturn]] void fail(const std::string& message) const;
  const std::string& where() const { return where_; }

 private:
  std::int64_t as_integer(const char* key, const nlohmann::json& v, std::int64_t lo,
                          std::int64_t hi) const;
  double as_number(const char* key, const nlohmann::json& v, double lo, double hi) const;

  const nlohmann::json& j_;
  std::string where_, what_;
};

// nlohmann's message without its "[json.exception.xxx] " prefix.
std::string json_message(const std::exception& e);

}  // namespace dbs::replay::detail
