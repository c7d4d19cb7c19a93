// Stream (lib/net/tls.h): plain TCP, or TLS with an SSL object that reads and writes the
// non-blocking socket itself. Every TLS operation is a loop of one SSL call and, when OpenSSL
// wants the socket to be readable or writable first, an asynchronous wait for that (drive()).
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

#include <cerrno>
#include <climits>
#include <cstdint>

#include "lib/net/tls.h"

namespace dbs::net {
namespace {

// A BIO on a socket descriptor (in its data pointer) without buffers: recv and send, the
// latter with MSG_NOSIGNAL so that a peer gone away is an error, never SIGPIPE. The descriptor
// is Asio's; the BIO never closes it.
int fd_of(BIO* bio) {
  return static_cast<int>(reinterpret_cast<std::intptr_t>(BIO_get_data(bio)));
}

int bio_read(BIO* bio, char* out, int n) {
  BIO_clear_retry_flags(bio);
  const ssize_t got = ::recv(fd_of(bio), out, static_cast<std::size_t>(n), 0);
  if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    BIO_set_retry_read(bio);
  return static_cast<int>(got);
}

int bio_write(BIO* bio, const char* in, int n) {
  BIO_clear_retry_flags(bio);
  const ssize_t put = ::send(fd_of(bio), in, static_cast<std::size_t>(n), MSG_NOSIGNAL);
  if (put < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    BIO_set_retry_write(bio);
  return static_cast<int>(put);
}

long bio_ctrl(BIO*, int cmd, long, void*) {
  return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

int bio_create(BIO* bio) {
  BIO_set_init(bio, 1);
  return 1;
}

BIO_METHOD* socket_bio_method() {
  static BIO_METHOD* const method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "dbs socket");
    BIO_meth_set_read(m, bio_read);
    BIO_meth_set_write(m, bio_write);
    BIO_meth_set_ctrl(m, bio_ctrl);
    BIO_meth_set_create(m, bio_create);
    return m;
  }();
  return method;
}

void set_fd(SSL* ssl, int fd) {
  BIO_set_data(SSL_get_rbio(ssl), reinterpret_cast<void*>(static_cast<std::intptr_t>(fd)));
}

// The error of an SSL call that ended with SSL_get_error() == `err`; `sys` is errno right after
// it. Mapped as Asio's ssl::stream maps them, so that callers can tell a clean end (eof) from a
// cut connection (stream_truncated).
error_code error_of(int err, int sys) {
  switch (err) {
    case SSL_ERROR_NONE:
      return {};
    case SSL_ERROR_ZERO_RETURN:
      return asio::error::eof;
    case SSL_ERROR_SYSCALL: {
      const unsigned long e = ERR_get_error();
      if (e != 0) return {static_cast<int>(e), asio::error::get_ssl_category()};
      if (sys != 0) return {sys, boost::system::system_category()};
      return ssl::error::stream_truncated;
    }
    case SSL_ERROR_SSL: {
      const unsigned long e = ERR_get_error();
      if (ERR_GET_REASON(e) == SSL_R_UNEXPECTED_EOF_WHILE_READING)
        return ssl::error::stream_truncated;
      return {static_cast<int>(e), asio::error::get_ssl_category()};
    }
    default:
      return ssl::error::unexpected_result;
  }
}

}  // namespace

void Stream::SslFree::operator()(SSL* ssl) const {
  SSL_free(ssl);
}

Stream::Stream(tcp::socket socket, ssl::context* tls) : socket_(std::move(socket)), ctx_(tls) {}

Stream::~Stream() = default;

void Stream::make_ssl(bool server) {
  error_code ignored;
  socket_.non_blocking(true, ignored);
  ssl_.reset(SSL_new(ctx_->native_handle()));
  if (!ssl_) throw std::bad_alloc();
  SSL_set_mode(ssl_.get(), SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                               SSL_MODE_RELEASE_BUFFERS);
  BIO* bio = BIO_new(socket_bio_method());
  if (bio == nullptr) throw std::bad_alloc();
  SSL_set_bio(ssl_.get(), bio, bio);
  set_fd(ssl_.get(), socket_.native_handle());
  if (server)
    SSL_set_accept_state(ssl_.get());
  else
    SSL_set_connect_state(ssl_.get());
}

void Stream::drive(Step step, std::function<void(const error_code&, int)> done, bool in_handler) {
  if (!socket_.is_open()) {
    asio::post(socket_.get_executor(),
               [done = std::move(done)] { done(asio::error::bad_descriptor, -1); });
    return;
  }
  ERR_clear_error();
  errno = 0;
  const int r = step();
  const int sys = errno;
  const int err = SSL_get_error(ssl_.get(), r);
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
    socket_.async_wait(
        err == SSL_ERROR_WANT_READ ? tcp::socket::wait_read : tcp::socket::wait_write,
        [this, step = std::move(step), done = std::move(done)](const error_code& ec) mutable {
          if (ec) {  // operation_aborted: closed meanwhile
            done(ec, -1);
            return;
          }
          drive(std::move(step), std::move(done), true);
        });
    return;
  }
  const error_code ec = error_of(err, sys);
  if (in_handler) {
    done(ec, r);
  } else {
    asio::post(socket_.get_executor(), [done = std::move(done), ec, r] { done(ec, r); });
  }
}

void Stream::accept(std::function<void(const error_code&, bool)> done) {
  if (!ctx_) {
    done({}, true);
    return;
  }
  // The peek holds one byte of this object; no TLS state exists until a client speaks.
  socket_.async_receive(asio::buffer(&first_, 1), tcp::socket::message_peek,
                        [this, done = std::move(done)](const error_code& ec, std::size_t n) {
                          if (ec || n == 0) {
                            done(ec ? ec : error_code(asio::error::eof), true);
                            return;
                          }
                          if (first_ != kTlsHandshakeRecord) {
                            ctx_ = nullptr;  // a plain client: answered in clear text
                            done({}, false);
                            return;
                          }
                          make_ssl(true);
                          drive([this] { return SSL_do_handshake(ssl_.get()); },
                                [done](const error_code& hec, int) { done(hec, true); }, true);
                        });
}

void Stream::connect(const std::string& host, std::function<void(const error_code&)> done) {
  if (!ctx_) {
    done({});
    return;
  }
  make_ssl(false);
  SSL* ssl = ssl_.get();
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  error_code not_ip;
  asio::ip::make_address(host, not_ip);
  if (!not_ip) {
    X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str());
  } else {
    X509_VERIFY_PARAM_set1_host(param, host.c_str(), 0);
    // SSL_set_tlsext_host_name, without the macro's C cast.
    SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
             const_cast<char*>(host.c_str()));
  }
  drive([this] { return SSL_do_handshake(ssl_.get()); },
        [done = std::move(done)](const error_code& ec, int) { done(ec); }, false);
}

std::string Stream::handshake_error(const error_code& ec) {
  if (ssl_) {
    const long verify = SSL_get_verify_result(ssl_.get());
    if (verify != X509_V_OK)
      return std::string("certificate not trusted: ") + X509_verify_cert_error_string(verify);
  }
  if (ec == asio::error::eof || ec == ssl::error::stream_truncated ||
      ec == asio::error::connection_reset)
    return "connection closed during the TLS handshake (does the peer speak TLS?)";
  if (ec.category() == asio::error::get_ssl_category()) {
    const int reason = ERR_GET_REASON(static_cast<unsigned long>(ec.value()));
    if (reason == SSL_R_WRONG_VERSION_NUMBER || reason == SSL_R_PACKET_LENGTH_TOO_LONG ||
        reason == SSL_R_UNKNOWN_PROTOCOL || reason == SSL_R_HTTP_REQUEST)
      return "the peer does not speak TLS (" + reason_of(ec) + ")";
    return "TLS handshake failed: " + reason_of(ec);
  }
  return "TLS handshake failed: " + ec.message();
}

void Stream::read_tls(asio::mutable_buffer buffer, IoDone done) {
  if (!ssl_) {  // no handshake: nothing can be read
    asio::post(socket_.get_executor(),
               [done = std::move(done)] { done(asio::error::not_connected, 0); });
    return;
  }
  const int n = static_cast<int>(std::min<std::size_t>(buffer.size(), INT_MAX));
  drive([this, buffer, n] { return SSL_read(ssl_.get(), buffer.data(), n); },
        [done = std::move(done)](const error_code& ec, int r) {
          done(ec, ec ? 0 : static_cast<std::size_t>(r));
        },
        false);
}

void Stream::write_tls(IoDone done) {
  if (!ssl_) {
    asio::post(socket_.get_executor(),
               [done = std::move(done)] { done(asio::error::not_connected, 0); });
    return;
  }
  // Small messages together go out as one record in one send (a gather of up to 64 short lines
  // would otherwise cost a record and a system call each); larger ones from their own memory.
  std::size_t total = 0;
  for (const auto& b : write_buffers_) total += b.size();
  if (write_buffers_.size() > 1 && total <= kCoalesceBytes) {
    staging_.reserve(total);
    for (const auto& b : write_buffers_)
      staging_.append(static_cast<const char*>(b.data()), b.size());
    write_buffers_.assign(1, asio::buffer(staging_));
  }
  write_next(0, 0, 0, [this, done = std::move(done)](const error_code& ec, std::size_t n) {
    std::string().swap(staging_);  // held only while a write is in flight
    done(ec, n);
  });
}

// Writes write_buffers_ from buffer `index`, byte `offset` on; `total` bytes are written so far.
void Stream::write_next(std::size_t index, std::size_t offset, std::size_t total, IoDone done) {
  while (index < write_buffers_.size() && offset == write_buffers_[index].size()) {
    ++index;
    offset = 0;
  }
  if (index == write_buffers_.size()) {
    asio::post(socket_.get_executor(), [done = std::move(done), total] { done({}, total); });
    return;
  }
  const auto& b = write_buffers_[index];
  const char* at = static_cast<const char*>(b.data()) + offset;
  const int n = static_cast<int>(std::min<std::size_t>(b.size() - offset, INT_MAX));
  drive([this, at, n] { return SSL_write(ssl_.get(), at, n); },
        [this, index, offset, total, done = std::move(done)](const error_code& ec, int r) mutable {
          if (ec) {
            done(ec, total);
            return;
          }
          const auto put = static_cast<std::size_t>(r);
          write_next(index, offset + put, total + put, std::move(done));
        },
        false);
}

void Stream::async_shutdown(std::function<void()> done) {
  if (!ctx_ || !ssl_ || !SSL_is_init_finished(ssl_.get())) {
    asio::post(socket_.get_executor(), std::move(done));
    return;
  }
  drive(
      [this] {
        const int r =
            SSL_shutdown(ssl_.get());  // 0: close_notify sent; once more to await the peer's
        return r == 0 ? SSL_shutdown(ssl_.get()) : r;
      },
      [done = std::move(done)](const error_code&, int) { done(); }, false);
}

void Stream::shutdown(tcp::socket::shutdown_type what) {
  error_code ignored;
  socket_.shutdown(what, ignored);
}

void Stream::close() {
  if (ssl_) set_fd(ssl_.get(), -1);  // the number may be reused before the SSL is freed
  error_code ignored;
  socket_.close(ignored);
}

}  // namespace dbs::net
