// Text formatting shared by every module: printf into a std::string, and durations as people
// read them in messages ("30 s", "0.25 s").
#pragma once

#include <string>

namespace dbs {

// printf-style formatting into a string (no length limit).
std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// A duration in seconds for a message: "%g s", e.g. "30 s", "0.5 s", "1e+06 s".
std::string format_seconds(double seconds);

}  // namespace dbs
