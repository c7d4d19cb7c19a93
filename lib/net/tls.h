// TLS (OpenSSL through Boost.Asio) for the daemon's two ports and the agents' client: contexts
// made from PEM files, and a Stream that is plain TCP or TLS over it, fixed when it is made.
// The server side peeks at a new connection's first byte so that a plain client on a TLS port is
// told so in clear text instead of timing out; every step is asynchronous and runs on the
// io_context thread of its owner.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "lib/net/asio.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/ssl.hpp>
#pragma GCC diagnostic pop

namespace dbs::net {

namespace ssl = boost::asio::ssl;
using TlsContext = std::shared_ptr<ssl::context>;

// The first byte of every TLS connection: a handshake record (RFC 8446, 5.1).
inline constexpr unsigned char kTlsHandshakeRecord = 0x16;

// A server context (TLS 1.2 or newer) with the certificate chain in cert_file and its private key
// in key_file (PEM). Throws ConfigError naming the option and file that cannot be read or parsed,
// or the key that does not match the certificate.
TlsContext server_context(const std::string& cert_file, const std::string& key_file);

// A client context (TLS 1.2 or newer) that trusts the CA certificates in ca_file (PEM) and
// nothing else. Throws ConfigError naming the file when it cannot be read or holds no
// certificate. `option` names the file in errors ("--tls-ca").
TlsContext client_context(const std::string& ca_file, const std::string& option = "--tls-ca");

class Stream {
 public:
  // A stream over `socket`; tls == nullptr: plain TCP.
  Stream(tcp::socket socket, ssl::context* tls);
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  bool tls() const { return tls_.has_value(); }
  tcp::socket& socket() { return socket_; }

  // Server side. Plain: done(ok, true) at once. TLS: peeks at the first byte; a TLS handshake
  // record starts the handshake, done(ec, true) when it ends; anything else makes the stream
  // plain, done({}, false), so the caller can answer the client in clear text. ec of a failed
  // handshake is for handshake_error().
  void accept(std::function<void(const error_code& ec, bool tls_client)> done);

  // Client side: verify the server's certificate for `host` (a DNS name or an IP address) and
  // send it as SNI, then handshake. Plain: done({}) at once.
  void connect(const std::string& host, std::function<void(const error_code& ec)> done);

  // One line saying why a handshake failed: an untrusted certificate (and why), a peer that does
  // not speak TLS, or OpenSSL's reason.
  std::string handshake_error(const error_code& ec);

  template <class Buffers, class Handler>
  void async_read_some(const Buffers& buffers, Handler&& handler) {
    if (tls_)
      tls_->async_read_some(buffers, std::forward<Handler>(handler));
    else
      socket_.async_read_some(buffers, std::forward<Handler>(handler));
  }
  // Writes all of `buffers` (asio::async_write).
  template <class Buffers, class Handler>
  void async_write(const Buffers& buffers, Handler&& handler) {
    if (tls_)
      asio::async_write(*tls_, buffers, std::forward<Handler>(handler));
    else
      asio::async_write(socket_, buffers, std::forward<Handler>(handler));
  }
  // TLS: sends close_notify and waits for the peer's (bounded by the caller's timer), then done.
  // Plain: done at once.
  void async_shutdown(std::function<void()> done);

  void shutdown(tcp::socket::shutdown_type what);
  void close();

 private:
  tcp::socket socket_;
  std::optional<ssl::stream<tcp::socket&>> tls_;
  unsigned char first_ = 0;
};

}  // namespace dbs::net
