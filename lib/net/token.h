// Job tokens: a secret shared by the daemon and its agents, kept in a file only its owner may
// read. The token is never logged; compare with proto::tokens_equal.
#pragma once

#include <string>

namespace dbs::net {

inline constexpr std::size_t kMinTokenLength = 16;

// The token in `path`: the file's content without surrounding whitespace. Throws ConfigError
// when the file cannot be read, is not owned by the process's effective user, is readable or
// writable by group or others ("chmod 600"), or
// holds fewer than kMinTokenLength characters.
std::string read_token_file(const std::string& path);

}  // namespace dbs::net
