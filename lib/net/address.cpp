#include "lib/net/address.h"

#include <charconv>

#include "lib/common/error.h"

namespace dbs::net {

HostPort parse_host_port(const std::string& text, const std::string& what) {
  const auto bad = [&](const std::string& why) {
    return ConfigError(what + " '" + text + "': " + why +
                       " (expected HOST:PORT, e.g. 127.0.0.1:7070)");
  };
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) throw bad("no host or no port");
  std::string host = text.substr(0, colon);
  const std::string port = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string::npos) {
    throw bad("an IPv6 address needs brackets");
  }
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value > 65535)
    throw bad("port must be a number in [0, 65535]");
  if (host.empty()) throw bad("empty host");
  return {host, static_cast<std::uint16_t>(value)};
}

std::string to_string(const tcp::endpoint& e) {
  const auto a = e.address();
  std::string out;
  if (a.is_v6()) out += '[';
  out += a.to_string();
  if (a.is_v6()) out += ']';
  out += ':';
  out += std::to_string(e.port());
  return out;
}

tcp::endpoint resolve_listen(asio::io_context& io, const HostPort& where, const std::string& what) {
  error_code ec;
  const auto address = asio::ip::make_address(where.host, ec);
  if (!ec) return {address, where.port};
  tcp::resolver resolver(io);
  const auto results = resolver.resolve(where.host, std::to_string(where.port), ec);
  if (ec || results.empty())
    throw ConfigError(what + ": cannot resolve '" + where.host + "': " + ec.message());
  return results.begin()->endpoint();
}

bool is_loopback(const asio::ip::address& a) {
  if (a.is_v4()) return a.to_v4().is_loopback();
  const auto v6 = a.to_v6();
  if (v6.is_v4_mapped()) return asio::ip::make_address_v4(asio::ip::v4_mapped, v6).is_loopback();
  return v6.is_loopback();
}

}  // namespace dbs::net
