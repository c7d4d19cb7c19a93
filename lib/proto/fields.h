// Internal to lib/proto: typed reads of a JSON object's fields, each throwing a ProtocolError
// (ErrorCode::invalid) with the exact message documented in lib/proto/codec.h.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace dbs::proto::detail {

class Fields {
 public:
  explicit Fields(const nlohmann::json& object) : object_(object) {}

  bool has(const char* key) const;
  const nlohmann::json& need(const char* key) const;  // "missing field 'key'"
  std::int64_t integer(const char* key, std::int64_t lo,
                       std::int64_t hi = std::numeric_limits<std::int64_t>::max()) const;
  int small(const char* key, int lo, int hi = std::numeric_limits<int>::max()) const;
  double time(const char* key) const;    // finite and >= 0
  double number(const char* key) const;  // finite
  bool boolean(const char* key) const;
  std::string string(const char* key, std::size_t max_len) const;
  std::string job(const char* key) const;  // a valid job id
  std::vector<int> ints(const char* key, int lo) const;
  std::vector<double> times(const char* key) const;
  const nlohmann::json& object(const char* key) const;

 private:
  const nlohmann::json& object_;
};

// "string", "null", "1.5": what a value is, for messages (never the text of a string).
std::string describe(const nlohmann::json& value);
[[noreturn]] void invalid(const std::string& message);

}  // namespace dbs::proto::detail
