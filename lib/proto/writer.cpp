#include "lib/proto/writer.h"

#include <charconv>
#include <cmath>

namespace dbs::proto::detail {

void Writer::key(std::string_view k) {
  if (out_.size() > 1) out_ += ',';
  string(k);
  out_ += ':';
}

void Writer::number(std::int64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out_.append(buf, r.ptr);
}

void Writer::number(double v) {
  if (!std::isfinite(v)) {
    out_ += "null";
    return;
  }
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out_.append(buf, r.ptr);
}

void Writer::string(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out_ += '"';
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out_ += '\\';
      out_ += c;
    } else if (u < 0x20) {
      out_ += "\\u00";
      out_ += kHex[u >> 4];
      out_ += kHex[u & 15];
    } else {
      out_ += c;
    }
  }
  out_ += '"';
}

Writer& Writer::field(std::string_view k, std::string_view value) {
  key(k);
  string(value);
  return *this;
}

Writer& Writer::field(std::string_view k, std::int64_t value) {
  key(k);
  number(value);
  return *this;
}

Writer& Writer::field(std::string_view k, double value) {
  key(k);
  number(value);
  return *this;
}

Writer& Writer::field(std::string_view k, bool value) {
  key(k);
  out_ += value ? "true" : "false";
  return *this;
}

Writer& Writer::field(std::string_view k, const std::vector<int>& values) {
  key(k);
  out_ += '[';
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out_ += ',';
    number(static_cast<std::int64_t>(values[i]));
  }
  out_ += ']';
  return *this;
}

Writer& Writer::field(std::string_view k, const std::vector<double>& values) {
  key(k);
  out_ += '[';
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out_ += ',';
    number(values[i]);
  }
  out_ += ']';
  return *this;
}

Writer& Writer::raw(std::string_view k, std::string_view json) {
  key(k);
  out_ += json;
  return *this;
}

std::string Writer::line() {
  out_ += "}\n";
  return std::move(out_);
}

}  // namespace dbs::proto::detail
