// Throwaway certificates for the TLS tests, made with OpenSSL's API in a temporary folder that
// goes with the object: P-256 keys, a CA, and server certificates it signed (or self-signed),
// valid from an hour ago to a day ahead unless a test asks for other times.
#pragma once

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

namespace dbs::test {

class Certs {
 public:
  Certs() {
    char tmpl[] = "/tmp/dbs-tls-test-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = tmpl;
  }
  ~Certs() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  Certs(const Certs&) = delete;
  Certs& operator=(const Certs&) = delete;

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // NAME.pem (a CA certificate) and NAME.key.
  void ca(const std::string& name) {
    Key key = new_key();
    Cert cert = new_cert(key.get(), "dbs test CA " + name, -3600, 86400);
    extend(cert.get(), cert.get(), NID_basic_constraints, "critical,CA:TRUE");
    extend(cert.get(), cert.get(), NID_key_usage, "critical,keyCertSign,cRLSign");
    sign(cert.get(), key.get());
    write(name, cert.get(), key.get());
  }

  // NAME.pem and NAME.key: a server certificate for localhost and 127.0.0.1 signed by the CA
  // `issuer` (made by ca()), or by its own key when issuer is empty, valid from now +
  // not_before_s to now + not_after_s.
  void server(const std::string& name, const std::string& issuer, long not_before_s = -3600,
              long not_after_s = 86400) {
    Key key = new_key();
    Cert cert = new_cert(key.get(), "dbs test server " + name, not_before_s, not_after_s);
    Cert ca_cert(nullptr, &X509_free);
    Key ca_key(nullptr, &EVP_PKEY_free);
    if (!issuer.empty()) {
      ca_cert = read_cert(path(issuer + ".pem"));
      ca_key = read_key(path(issuer + ".key"));
      X509_set_issuer_name(cert.get(), X509_get_subject_name(ca_cert.get()));
    }
    X509* signer = issuer.empty() ? cert.get() : ca_cert.get();
    extend(cert.get(), signer, NID_basic_constraints, "critical,CA:FALSE");
    extend(cert.get(), signer, NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1");
    extend(cert.get(), signer, NID_ext_key_usage, "serverAuth");
    sign(cert.get(), issuer.empty() ? key.get() : ca_key.get());
    write(name, cert.get(), key.get());
  }

  // A file holding `text`.
  std::string file(const std::string& name, const std::string& text) const {
    std::FILE* f = std::fopen(path(name).c_str(), "w");
    if (f == nullptr) throw std::runtime_error("cannot write " + path(name));
    std::fputs(text.c_str(), f);
    std::fclose(f);
    return path(name);
  }

 private:
  using Key = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
  using Cert = std::unique_ptr<X509, decltype(&X509_free)>;

  static Key new_key() {
    Key key(EVP_EC_gen("P-256"), &EVP_PKEY_free);
    if (!key) throw std::runtime_error("EVP_EC_gen failed");
    return key;
  }

  static Cert new_cert(EVP_PKEY* key, const std::string& cn, long not_before_s, long not_after_s) {
    static long serial = 1;
    Cert cert(X509_new(), &X509_free);
    X509_set_version(cert.get(), 2);
    ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial++);
    X509_gmtime_adj(X509_getm_notBefore(cert.get()), not_before_s);
    X509_gmtime_adj(X509_getm_notAfter(cert.get()), not_after_s);
    X509_set_pubkey(cert.get(), key);
    X509_NAME* subject = X509_get_subject_name(cert.get());
    X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
    X509_set_issuer_name(cert.get(), subject);
    return cert;
  }

  static void extend(X509* cert, X509* issuer, int nid, const char* value) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    if (ext == nullptr) throw std::runtime_error(std::string("extension ") + value);
    X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
  }

  static void sign(X509* cert, EVP_PKEY* key) {
    if (X509_sign(cert, key, EVP_sha256()) == 0) throw std::runtime_error("X509_sign failed");
  }

  void write(const std::string& name, X509* cert, EVP_PKEY* key) const {
    std::FILE* c = std::fopen(path(name + ".pem").c_str(), "w");
    std::FILE* k = std::fopen(path(name + ".key").c_str(), "w");
    const bool ok = c != nullptr && k != nullptr && PEM_write_X509(c, cert) == 1 &&
                    PEM_write_PrivateKey(k, key, nullptr, nullptr, 0, nullptr, nullptr) == 1;
    if (c != nullptr) std::fclose(c);
    if (k != nullptr) std::fclose(k);
    if (!ok) throw std::runtime_error("cannot write " + name);
  }

  static Cert read_cert(const std::string& file) {
    std::FILE* f = std::fopen(file.c_str(), "r");
    if (f == nullptr) throw std::runtime_error("cannot read " + file);
    Cert cert(PEM_read_X509(f, nullptr, nullptr, nullptr), &X509_free);
    std::fclose(f);
    return cert;
  }

  static Key read_key(const std::string& file) {
    std::FILE* f = std::fopen(file.c_str(), "r");
    if (f == nullptr) throw std::runtime_error("cannot read " + file);
    Key key(PEM_read_PrivateKey(f, nullptr, nullptr, nullptr), &EVP_PKEY_free);
    std::fclose(f);
    return key;
  }

  std::filesystem::path dir_;
};

}  // namespace dbs::test
