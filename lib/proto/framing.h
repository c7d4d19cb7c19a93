// Newline-delimited framing: bytes in, whole lines out, each at most max_line bytes (newline
// excluded). A "\r" before the "\n" is dropped and empty lines are skipped. Pure code: the
// sockets of lib/net feed it what they read.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "lib/proto/protocol.h"

namespace dbs::proto {

class LineReader {
 public:
  explicit LineReader(std::size_t max_line = kMaxMessage) : max_line_(max_line) {}

  // Calls on_line(std::string_view) for every complete line in bytes, in order; on_line returns
  // false to stop (the rest is dropped). Returns false when a line grew past max_line: that
  // line is dropped, too_long() is set and the reader accepts nothing more. Lines that lie
  // whole in `bytes` are passed without copying.
  template <typename OnLine>
  bool feed(std::string_view bytes, OnLine&& on_line) {
    if (too_long_) return false;
    while (!bytes.empty()) {
      const std::size_t nl = bytes.find('\n');
      if (nl == std::string_view::npos) {
        if (pending_.size() + bytes.size() > max_line_ + 1) return overflow();  // +1: a '\r'
        pending_.append(bytes);
        return true;
      }
      std::string_view line = bytes.substr(0, nl);
      bytes.remove_prefix(nl + 1);
      if (!pending_.empty()) {
        if (pending_.size() + line.size() > max_line_ + 1) return overflow();
        pending_.append(line);
        line = pending_;
      }
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.size() > max_line_) return overflow();
      const bool go_on = line.empty() || on_line(line);
      pending_.clear();
      if (!go_on) return true;
    }
    return true;
  }

  bool partial() const { return !pending_.empty(); }  // an unfinished line is waiting
  bool too_long() const { return too_long_; }
  std::size_t max_line() const { return max_line_; }
  void set_max_line(std::size_t max_line) { max_line_ = max_line; }  // for the lines to come
  // "message longer than 1048576 bytes"
  std::string too_long_message() const;

 private:
  bool overflow() {
    too_long_ = true;
    pending_.clear();
    pending_.shrink_to_fit();
    return false;
  }

  std::size_t max_line_;
  std::string pending_;
  bool too_long_ = false;
};

}  // namespace dbs::proto
