#include "lib/common/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

#include "lib/common/error.h"

namespace dbs::log {
namespace {
std::mutex g_mutex;
std::string g_tag;
std::atomic<int> g_level{static_cast<int>(Level::info)};

const char* name(Level l) {
  switch (l) {
    case Level::debug:
      return "debug";
    case Level::info:
      return "info";
    case Level::warn:
      return "warning";
    case Level::error:
      return "error";
  }
  return "?";
}
}  // namespace

void set_tag(std::string tag) {
  std::lock_guard lock(g_mutex);
  g_tag = std::move(tag);
}

void set_level(Level level) {
  g_level = static_cast<int>(level);
}

Level parse_level(std::string_view word) {
  for (const Level l : {Level::debug, Level::info, Level::warn, Level::error})
    if (word == name(l)) return l;
  throw ConfigError("unknown log level '" + std::string(word) +
                    "' (expected debug, info, warning or error)");
}

std::string timestamp() {
  using namespace std::chrono;
  const auto now = system_clock::now();
  const std::time_t secs = system_clock::to_time_t(now);
  const auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm utc{};
  gmtime_r(&secs, &utc);
  char buf[32];
  const std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &utc);
  std::snprintf(buf + n, sizeof buf - n, ".%03dZ", static_cast<int>(ms));
  return buf;
}

void write(Level level, std::string_view message) {
  if (static_cast<int>(level) < g_level.load()) return;
  const std::string when = timestamp();
  std::lock_guard lock(g_mutex);
  if (g_tag.empty())
    std::fprintf(stderr, "%s dbs %s: %.*s\n", when.c_str(), name(level),
                 static_cast<int>(message.size()), message.data());
  else
    std::fprintf(stderr, "%s dbs [%s] %s: %.*s\n", when.c_str(), g_tag.c_str(), name(level),
                 static_cast<int>(message.size()), message.data());
  std::fflush(stderr);
}

}  // namespace dbs::log
