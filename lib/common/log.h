// Minimal logging to stderr: one line per call, safe to call from several threads, in the form
//   2026-11-22T23:40:01.123Z dbs [rank 1] info: message
// (ISO 8601 UTC time to the millisecond, the process tag when set, the level).
#pragma once

#include <string>
#include <string_view>

namespace dbs::log {

enum class Level { debug = 0, info = 1, warn = 2, error = 3 };

void set_tag(std::string tag);  // prefix for every line, e.g. "rank 0"
void set_level(Level level);    // lines below it are dropped
// "debug", "info", "warning" or "error" (the --log-level words); throws ConfigError otherwise.
Level parse_level(std::string_view name);
void write(Level level, std::string_view message);
// The current UTC time as ISO 8601 with milliseconds: "2026-11-22T23:40:01.123Z".
std::string timestamp();

inline void debug(std::string_view m) {
  write(Level::debug, m);
}
inline void info(std::string_view m) {
  write(Level::info, m);
}
inline void warn(std::string_view m) {
  write(Level::warn, m);
}
inline void error(std::string_view m) {
  write(Level::error, m);
}

}  // namespace dbs::log
