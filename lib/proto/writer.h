// Internal to lib/proto: writes one JSON object straight into a string, without building a
// DOM (a 10,000-rank plan in a fraction of nlohmann's time). Numbers use the shortest form that
// reads back exactly; non-finite doubles become null; strings are escaped as JSON requires.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dbs::proto::detail {

class Writer {
 public:
  Writer() { out_ += '{'; }
  Writer& field(std::string_view key, std::string_view value);
  Writer& field(std::string_view key, const char* value) {
    return field(key, std::string_view(value));
  }
  Writer& field(std::string_view key, std::int64_t value);
  Writer& field(std::string_view key, int value) {
    return field(key, static_cast<std::int64_t>(value));
  }
  Writer& field(std::string_view key, double value);
  Writer& field(std::string_view key, bool value);
  Writer& field(std::string_view key, const std::vector<int>& values);
  Writer& field(std::string_view key, const std::vector<double>& values);
  Writer& raw(std::string_view key, std::string_view json);  // an already encoded value
  // The object with its closing brace and a newline; the writer is spent.
  std::string line();

 private:
  void key(std::string_view k);
  void number(std::int64_t v);
  void number(double v);
  void string(std::string_view s);
  std::string out_;
};

}  // namespace dbs::proto::detail
