#include "lib/net/tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <fstream>

#include "lib/common/error.h"

namespace dbs::net {

std::string reason_of(const error_code& ec) {
  if (ec.category() == asio::error::get_ssl_category()) {
    const char* r = ERR_reason_error_string(static_cast<unsigned long>(ec.value()));
    if (r != nullptr) return r;
  }
  return ec.message();
}

namespace {

// Throws ConfigError unless `path` opens for reading.
void check_readable(const std::string& option, const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(option + " " + path + ": cannot read the file");
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
    throw ConfigError(cert_file.empty() ? "--tls-key needs --tls-cert"
                                        : "--tls-cert needs --tls-key");
  check_readable("--tls-cert", cert_file);
  check_readable("--tls-key", key_file);
  auto ctx = base_context(ssl::context::tls_server);
  error_code ec;
  ctx->use_certificate_chain_file(cert_file, ec);
  if (ec)
    throw ConfigError("--tls-cert " + cert_file + ": not a PEM certificate (" + reason_of(ec) +
                      ")");
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
  // No client of the daemon resumes a session (dbs-agent makes a new SSL per connection), so the
  // server neither caches sessions nor issues tickets: both cost memory or CPU per handshake.
  SSL_CTX_set_session_cache_mode(ctx->native_handle(), SSL_SESS_CACHE_OFF);
  SSL_CTX_set_num_tickets(ctx->native_handle(), 0);
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

}  // namespace dbs::net
