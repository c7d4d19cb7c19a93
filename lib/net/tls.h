// TLS (OpenSSL) for the daemon's two ports and the agents' client: contexts made from PEM files
// (through Boost.Asio's ssl::context), and a Stream that is plain TCP or TLS over it, fixed when
// it is made. The server side peeks at a new connection's first byte so that a plain client on a
// TLS port is told so in clear text instead of timing out; every step is asynchronous and runs on
// the io_context thread of its owner.
//
// Memory per connection is what bounds a daemon holding thousands of them, so a TLS Stream holds
// no TLS state until it is needed: the server makes its SSL object only when the client's first
// byte has arrived (a connection that never sends costs what a plain one costs), and the SSL
// reads and writes the socket itself, through a BIO without buffers of its own, with OpenSSL's
// record buffers released whenever nothing is in flight (SSL_MODE_RELEASE_BUFFERS). Asio's
// ssl::stream is not used: it allocates two 17 KiB buffers at construction and OpenSSL's BIO pair
// two more, for the life of the connection.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

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

// OpenSSL's reason for an error of the SSL category, else ec.message().
std::string reason_of(const error_code& ec);

class Stream {
 public:
  // A stream over `socket`; tls == nullptr: plain TCP. The context must outlive the stream.
  Stream(tcp::socket socket, ssl::context* tls);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  bool tls() const { return ctx_ != nullptr; }
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

  // Reads what has arrived into `buffers` (their first buffer over TLS). Over TLS, the peer's
  // close_notify ends the stream with asio::error::eof and a close without it with
  // ssl::error::stream_truncated, as with Asio's ssl::stream.
  template <class Buffers, class Handler>
  void async_read_some(const Buffers& buffers, Handler&& handler) {
    if (ctx_)
      read_tls(*asio::buffer_sequence_begin(buffers), IoDone(std::forward<Handler>(handler)));
    else
      socket_.async_read_some(buffers, std::forward<Handler>(handler));
  }
  // Writes all of `buffers` (asio::async_write); one write at a time per stream.
  template <class Buffers, class Handler>
  void async_write(const Buffers& buffers, Handler&& handler) {
    if (ctx_) {
      write_buffers_.assign(asio::buffer_sequence_begin(buffers),
                            asio::buffer_sequence_end(buffers));
      write_tls(IoDone(std::forward<Handler>(handler)));
    } else {
      asio::async_write(socket_, buffers, std::forward<Handler>(handler));
    }
  }
  // TLS: sends close_notify and waits for the peer's (bounded by the caller's timer), then done.
  // Plain, or before a handshake finished: done at once.
  void async_shutdown(std::function<void()> done);

  void shutdown(tcp::socket::shutdown_type what);
  void close();

 private:
  using IoDone = std::function<void(const error_code&, std::size_t)>;
  using Step = std::function<int()>;  // one non-blocking SSL call, its return value

  void make_ssl(bool server);
  void read_tls(asio::mutable_buffer buffer, IoDone done);
  void write_tls(IoDone done);
  void write_next(std::size_t index, std::size_t offset, std::size_t total, IoDone done);
  // Runs `step` until it neither wants to read nor write the socket, waiting for the socket in
  // between, then done(ec, step's result). `in_handler`: called from a completion handler, so
  // done may run at once; else it is posted.
  void drive(Step step, std::function<void(const error_code&, int)> done, bool in_handler);

  struct SslFree {
    void operator()(SSL* ssl) const;
  };
  tcp::socket socket_;
  ssl::context* ctx_;                                   // null: plain TCP
  std::unique_ptr<SSL, SslFree> ssl_;                   // null until the handshake starts
  static constexpr std::size_t kCoalesceBytes = 16384;  // one TLS record's worth of plaintext
  std::vector<asio::const_buffer> write_buffers_;       // of the write in flight
  std::string staging_;  // small buffers of the write in flight, copied together
  unsigned char first_ = 0;
};

}  // namespace dbs::net
