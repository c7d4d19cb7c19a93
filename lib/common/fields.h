// Typed, strict reads of a JSON object's fields: the one checker behind every JSON form of dbs
// (protocol messages, journal and trace records, synthetic specs). Each read throws FieldError
// "<where>: <message>" (just "<message>" when where is empty), the message one of
//   missing field 'rank'
//   field 'rank' must be an integer, got string
//   field 'world' must be an integer in [1, 1000000], got 0
//   field 'compute_s' must be a finite number >= 0, got -1
//   field 'batch' item 2 must be an integer >= 0, got -3
//   unknown field 'epoch' (known: epochs, policy)
// Numbers in messages are the JSON text; other values are named by their type only.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lib/common/error.h"

namespace dbs {

class FieldError : public InputError {
 public:
  using InputError::InputError;
};

class Fields {
 public:
  static constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  static constexpr double kHuge = std::numeric_limits<double>::max();

  // Throws FieldError "<where>: is not a JSON object" unless j is an object.
  explicit Fields(const nlohmann::json& j, std::string where = "");

  bool has(const char* key) const { return j_.contains(key); }
  // Fails on the first key not in `known` (a misspelt field is never silently ignored).
  void only(std::initializer_list<const char*> known) const;
  const nlohmann::json& need(const char* key) const;
  std::int64_t integer(const char* key, std::int64_t lo, std::int64_t hi = kMax) const;
  std::int64_t integer_or(const char* key, std::int64_t fallback, std::int64_t lo,
                          std::int64_t hi = kMax) const;
  int small(const char* key, int lo, int hi = std::numeric_limits<int>::max()) const;
  // A finite number in [lo, hi].
  double number(const char* key, double lo = -kHuge, double hi = kHuge) const;
  double number_or(const char* key, double fallback, double lo = -kHuge, double hi = kHuge) const;
  bool boolean(const char* key) const;
  std::string string(const char* key, std::size_t max_len = 1 << 20) const;
  std::string string_or(const char* key, const std::string& fallback,
                        std::size_t max_len = 1 << 20) const;
  std::vector<int> ints(const char* key, int lo, int hi = std::numeric_limits<int>::max()) const;
  std::vector<double> numbers(const char* key, double lo = -kHuge, double hi = kHuge) const;
  Fields object(const char* key) const;  // a nested object, same `where`
  const nlohmann::json& value() const { return j_; }
  const std::string& where() const { return where_; }

  [[noreturn]] void fail(const std::string& message) const;

 private:
  std::int64_t as_integer(const std::string& name, const nlohmann::json& v, std::int64_t lo,
                          std::int64_t hi) const;
  double as_number(const std::string& name, const nlohmann::json& v, double lo, double hi) const;

  const nlohmann::json& j_;
  std::string where_;
};

// "string", "null", "1.5": what a value is, for messages (never the text of a string).
std::string describe(const nlohmann::json& value);
// nlohmann's message without its "[json.exception.xxx] " prefix.
std::string json_message(const std::exception& e);

}  // namespace dbs
