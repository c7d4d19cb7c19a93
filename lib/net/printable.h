// Text a peer sent, made safe for a log line: one line, printable ASCII, bounded.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace dbs::net {

// Backslash, control and non-ASCII bytes become escapes ("\n", "\\", "\x1b"); text longer than
// max_bytes is cut and ends in "...". So a peer cannot forge or split a log line.
std::string printable(std::string_view text, std::size_t max_bytes = 256);

}  // namespace dbs::net
