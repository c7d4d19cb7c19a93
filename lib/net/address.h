// "HOST:PORT" endpoints of the daemon and the loopback rule.
#pragma once

#include <cstdint>
#include <string>

#include "lib/net/asio.h"

namespace dbs::net {

struct HostPort {
  std::string host;        // name or address; "[::1]" brackets removed
  std::uint16_t port = 0;  // 0 = any free port (servers)
};

// Parses "HOST:PORT" or "[V6]:PORT". Throws ConfigError naming `what` (an option) and the text.
HostPort parse_host_port(const std::string& text, const std::string& what);
std::string to_string(const tcp::endpoint& endpoint);  // "127.0.0.1:7070", "[::1]:7070"

// Resolves a listen address to one endpoint (numeric addresses and host names). Throws
// ConfigError.
tcp::endpoint resolve_listen(asio::io_context& io, const HostPort& where, const std::string& what);

bool is_loopback(const asio::ip::address& address);

}  // namespace dbs::net
