// lib/net/tls: contexts from PEM files, each bad file one ConfigError naming the option and the
// file; and handshakes on 127.0.0.1 between a server Stream and a client Stream, which succeed
// with the CA that signed the server's certificate and otherwise fail on both sides with one
// line naming the fault (every run bounded to 5 s).
#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <string>

#include "lib/common/error.h"
#include "lib/net/tls.h"
#include "tests/net/certs.h"

namespace {

using namespace dbs::net;
using dbs::test::Certs;

// The message of the ConfigError that f throws; "" when it throws none.
template <typename F>
std::string config_error(F f) {
  try {
    f();
  } catch (const dbs::ConfigError& e) {
    return e.what();
  }
  return "";
}

// A CA "ca" with a server certificate "server" it signed, another CA "other" with its own
// "other-server", an expired server certificate of "ca" and a self-signed one.
struct Fixture {
  Fixture() {
    certs.ca("ca");
    certs.server("server", "ca");
    certs.ca("other");
    certs.server("other-server", "other");
    certs.server("expired", "ca", -2 * 86400, -86400);
    certs.server("self", "");
  }
  std::string pem(const std::string& name) const { return certs.path(name + ".pem"); }
  std::string key(const std::string& name) const { return certs.path(name + ".key"); }
  Certs certs;
};

struct Outcome {
  bool server_done = false, client_done = false;
  error_code server_ec, client_ec;
  std::string server_why, client_why;  // handshake_error() of a failed side
  std::string received;                // what the server read after a handshake
};

// One connection on 127.0.0.1: the server Stream (server_ctx) accepts it, the client Stream
// (client_ctx) handshakes verifying `host`, and, once both handshakes are done, sends a line
// the server reads. The io runs at most 5 s.
Outcome handshake(const TlsContext& server_ctx, const TlsContext& client_ctx,
                  const std::string& host = "127.0.0.1") {
  asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  std::unique_ptr<Stream> server;
  Stream client(tcp::socket(io), client_ctx.get());
  Outcome out;
  char buffer[64] = {};
  const std::string line = "hello over TLS\n";
  const auto both_done = [&] {
    if (!out.server_done || !out.client_done || out.server_ec || out.client_ec) return;
    client.async_write(asio::buffer(line), [](const error_code&, std::size_t) {});
    server->async_read_some(asio::buffer(buffer), [&](const error_code& ec, std::size_t n) {
      if (!ec) out.received.assign(buffer, n);
    });
  };
  acceptor.async_accept([&](const error_code& ec, tcp::socket socket) {
    REQUIRE_FALSE(ec);
    server = std::make_unique<Stream>(std::move(socket), server_ctx.get());
    server->accept([&](const error_code& hec, bool tls_client) {
      CHECK(tls_client);
      out.server_done = true;
      out.server_ec = hec;
      if (hec) out.server_why = server->handshake_error(hec);
      both_done();
    });
  });
  client.socket().async_connect(acceptor.local_endpoint(), [&](const error_code& ec) {
    REQUIRE_FALSE(ec);
    client.connect(host, [&](const error_code& hec) {
      out.client_done = true;
      out.client_ec = hec;
      if (hec) out.client_why = client.handshake_error(hec);
      both_done();
    });
  });
  io.run_for(std::chrono::seconds(5));
  return out;
}

// A handshake the client refuses: both sides end, the client with `why`, in one line each.
void check_refused(const Outcome& out, const std::string& why) {
  REQUIRE(out.client_done);
  REQUIRE(out.server_done);
  CHECK(out.client_ec);
  CHECK(out.server_ec);
  CHECK(out.client_why == why);
  CHECK(out.client_why.find('\n') == std::string::npos);
  CHECK_FALSE(out.server_why.empty());
  CHECK(out.server_why.find('\n') == std::string::npos);
  CHECK(out.received.empty());
}

}  // namespace

TEST_CASE("Tls.ServerContext.MissingCertOrKeyNamesTheFile") {
  Fixture f;
  const std::string nope = f.certs.path("nope.pem");
  CHECK(config_error([&] { server_context(nope, f.key("server")); }) ==
        "--tls-cert " + nope + ": cannot read the file");
  CHECK(config_error([&] { server_context(f.pem("server"), nope); }) ==
        "--tls-key " + nope + ": cannot read the file");
  CHECK(config_error([&] { server_context(f.pem("server"), ""); }) == "--tls-cert needs --tls-key");
  CHECK(config_error([&] { server_context("", f.key("server")); }) == "--tls-key needs --tls-cert");
}

TEST_CASE("Tls.ServerContext.KeyOfAnotherCertificateIsRefused") {
  Fixture f;
  CHECK(config_error([&] { server_context(f.pem("server"), f.key("other-server")); }) ==
        "--tls-key " + f.key("other-server") + " does not match the certificate in --tls-cert " +
            f.pem("server"));
}

TEST_CASE("Tls.ServerContext.NonPemFilesNameTheFile") {
  Fixture f;
  const std::string text = f.certs.file("notes.txt", "not a certificate\n");
  const std::string cert_error = config_error([&] { server_context(text, f.key("server")); });
  CHECK(cert_error.starts_with("--tls-cert " + text + ": not a PEM certificate ("));
  // A key file in the certificate's place holds no certificate either.
  CHECK(config_error([&] { server_context(f.key("server"), f.key("server")); })
            .starts_with("--tls-cert " + f.key("server") + ": not a PEM certificate ("));
  const std::string key_error = config_error([&] { server_context(f.pem("server"), text); });
  CHECK(key_error.starts_with("--tls-key " + text + ": not a PEM private key ("));
  CHECK(key_error.find('\n') == std::string::npos);
}

TEST_CASE("Tls.ServerContext.MatchingFilesLoad") {
  Fixture f;
  CHECK(server_context(f.pem("server"), f.key("server")) != nullptr);
  CHECK(server_context(f.pem("expired"), f.key("expired")) != nullptr);  // the client judges dates
}

TEST_CASE("Tls.ClientContext.MissingOrNonPemCaNamesTheFile") {
  Fixture f;
  const std::string nope = f.certs.path("nope.pem");
  CHECK(config_error([&] { client_context(nope); }) == "--tls-ca " + nope + ": cannot read the file");
  CHECK(config_error([&] { client_context(nope, "tls_ca"); }) ==
        "tls_ca " + nope + ": cannot read the file");
  const std::string text = f.certs.file("notes.txt", "not a certificate\n");
  CHECK(config_error([&] { client_context(text); })
            .starts_with("--tls-ca " + text + ": no PEM CA certificate ("));
  const std::string empty = f.certs.file("empty.pem", "");
  CHECK(config_error([&] { client_context(empty); })
            .starts_with("--tls-ca " + empty + ": no PEM CA certificate ("));
  CHECK(config_error([&] { client_context(f.key("ca"), "tls_ca"); })
            .starts_with("tls_ca " + f.key("ca") + ": no PEM CA certificate ("));
  CHECK(client_context(f.pem("ca")) != nullptr);
}

TEST_CASE("Tls.Handshake.RightCaSucceeds") {
  Fixture f;
  const TlsContext server = server_context(f.pem("server"), f.key("server"));
  const TlsContext client = client_context(f.pem("ca"));
  for (const std::string host : {"127.0.0.1", "localhost"}) {
    CAPTURE(host);
    const Outcome out = handshake(server, client, host);
    REQUIRE(out.client_done);
    REQUIRE(out.server_done);
    CHECK_MESSAGE(!out.client_ec, out.client_why);
    CHECK_MESSAGE(!out.server_ec, out.server_why);
    CHECK(out.received == "hello over TLS\n");
  }
}

TEST_CASE("Tls.Handshake.WrongCaFails") {
  Fixture f;
  check_refused(handshake(server_context(f.pem("server"), f.key("server")),
                          client_context(f.pem("other"))),
                "certificate not trusted: unable to get local issuer certificate");
}

TEST_CASE("Tls.Handshake.ExpiredCertificateFails") {
  Fixture f;
  check_refused(handshake(server_context(f.pem("expired"), f.key("expired")),
                          client_context(f.pem("ca"))),
                "certificate not trusted: certificate has expired");
}

TEST_CASE("Tls.Handshake.SelfSignedCertificateFails") {
  Fixture f;
  check_refused(handshake(server_context(f.pem("self"), f.key("self")), client_context(f.pem("ca"))),
                "certificate not trusted: self-signed certificate");
}

TEST_CASE("Tls.Handshake.OtherHostNameFails") {
  Fixture f;
  check_refused(handshake(server_context(f.pem("server"), f.key("server")),
                          client_context(f.pem("ca")), "elsewhere.example"),
                "certificate not trusted: hostname mismatch");
}
