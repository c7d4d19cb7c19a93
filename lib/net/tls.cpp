#include "lib/net/tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <fstream>

#include "lib/common/error.h"

namespace dbs::net {
namespace {

// Throws ConfigError unless `path` opens for reading.
void check_readable(const std::string& option, const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(option + " " + path + ": cannot read the file");
}

std::string reason_of(const error_code& ec) {
  if (ec.category() == asio::error::get_ssl_category()) {
    const char* r = ERR_reason_error_string(static_cast<unsigned long>(ec.value()));
    if (r != nullptr) return r;
  }
  return ec.message();
}

TlsContext base_context(ssl::context::method method) {
  auto ctx = std::make_shared<ssl::context>(method);
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                   ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  return ctx;
}

}  // namespace

TlsContext server_context(const std::string& cert_file, const std::string& key_file) {
  if (cert_file.empty() != key_file.empty())
    throw ConfigError(cert_file.empty() ? "--tls-key needs --tls-cert" : "--tls-cert needs --tls-key");
  check_readable("--tls-cert", cert_file);
  check_readable("--tls-key", key_file);
  auto ctx = base_context(ssl::context::tls_server);
  error_code ec;
  ctx->use_certificate_chain_file(cert_file, ec);
  if (ec)
    throw ConfigError("--tls-cert " + cert_file + ": not a PEM certificate (" + reason_of(ec) + ")");
  ctx->use_private_key_file(key_file, ssl::context::pem, ec);
  if (ec) {
    const bool mismatch =
        ec.category() == asio::error::get_ssl_category() &&
        ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == X509_R_KEY_VALUES_MISMATCH;
    throw ConfigError(mismatch ? "--tls-key " + key_file + " does not match the certificate in " +
                                     "--tls-cert " + cert_file
                               : "--tls-key " + key_file + ": not a PEM private key (" +
                                     reason_of(ec) + ")");
  }
  if (SSL_CTX_check_private_key(ctx->native_handle()) != 1)
    throw ConfigError("--tls-key " + key_file + " does not match the certificate in --tls-cert " +
                      cert_file);
  return ctx;
}

TlsContext client_context(const std::string& ca_file, const std::string& option) {
  check_readable(option, ca_file);
  auto ctx = base_context(ssl::context::tls_client);
  error_code ec;
  ctx->load_verify_file(ca_file, ec);
  if (ec)
    throw ConfigError(option + " " + ca_file + ": no PEM CA certificate (" + reason_of(ec) + ")");
  ctx->set_verify_mode(ssl::verify_peer);
  return ctx;
}

Stream::Stream(tcp::socket socket, ssl::context* tls) : socket_(std::move(socket)) {
  if (tls != nullptr) tls_.emplace(socket_, *tls);
}

void Stream::accept(std::function<void(const error_code&, bool)> done) {
  if (!tls_) {
    done({}, true);
    return;
  }
  socket_.async_receive(
      asio::buffer(&first_, 1), tcp::socket::message_peek,
      [this, done = std::move(done)](const error_code& ec, std::size_t n) {
        if (ec || n == 0) {
          done(ec ? ec : error_code(asio::error::eof), true);
          return;
        }
        if (first_ != kTlsHandshakeRecord) {
          tls_.reset();  // a plain client: answered in clear text
          done({}, false);
          return;
        }
        tls_->async_handshake(ssl::stream_base::server,
                              [done](const error_code& hec) { done(hec, true); });
      });
}

void Stream::connect(const std::string& host, std::function<void(const error_code&)> done) {
  if (!tls_) {
    done({});
    return;
  }
  SSL* ssl = tls_->native_handle();
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
  tls_->async_handshake(ssl::stream_base::client,
                        [done = std::move(done)](const error_code& ec) { done(ec); });
}

std::string Stream::handshake_error(const error_code& ec) {
  if (tls_) {
    const long verify = SSL_get_verify_result(tls_->native_handle());
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

void Stream::async_shutdown(std::function<void()> done) {
  if (!tls_) {
    done();
    return;
  }
  tls_->async_shutdown([done = std::move(done)](const error_code&) { done(); });
}

void Stream::shutdown(tcp::socket::shutdown_type what) {
  error_code ignored;
  socket_.shutdown(what, ignored);
}

void Stream::close() {
  error_code ignored;
  socket_.close(ignored);
}

}  // namespace dbs::net
