// lib/net addresses and token files.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "lib/common/error.h"
#include "lib/net/address.h"
#include "lib/net/token.h"

namespace {

using namespace dbs::net;

std::string config_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const dbs::ConfigError& e) {
    return e.what();
  }
  return "ok";
}

std::string token_file(const std::string& text, mode_t mode) {
  char name[] = "/tmp/dbs-token-test.XXXXXX";
  const int fd = ::mkstemp(name);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  ::close(fd);
  ::chmod(name, mode);
  return name;
}

}  // namespace

TEST_CASE("Address.ParsesHostAndPort") {
  const HostPort a = parse_host_port("127.0.0.1:7070", "--listen");
  CHECK(a.host == "127.0.0.1");
  CHECK(a.port == 7070);
  CHECK(parse_host_port("[::1]:0", "--listen").host == "::1");
  CHECK(parse_host_port("head-node.cluster:7070", "--scheduler").host == "head-node.cluster");
  CHECK(config_error([] { parse_host_port("127.0.0.1", "--listen"); }) ==
        "--listen '127.0.0.1': no host or no port (expected HOST:PORT, e.g. 127.0.0.1:7070)");
  CHECK(config_error([] { parse_host_port("127.0.0.1:70000", "--listen"); }) ==
        "--listen '127.0.0.1:70000': port must be a number in [0, 65535] (expected HOST:PORT, e.g. "
        "127.0.0.1:7070)");
  CHECK(config_error([] { parse_host_port("::1:7070", "--http"); }) ==
        "--http '::1:7070': an IPv6 address needs brackets (expected HOST:PORT, e.g. "
        "127.0.0.1:7070)");
}

TEST_CASE("Address.Loopback") {
  CHECK(is_loopback(asio::ip::make_address("127.0.0.1")));
  CHECK(is_loopback(asio::ip::make_address("127.3.2.1")));
  CHECK(is_loopback(asio::ip::make_address("::1")));
  CHECK(is_loopback(asio::ip::make_address("::ffff:127.0.0.1")));
  CHECK_FALSE(is_loopback(asio::ip::make_address("0.0.0.0")));
  CHECK_FALSE(is_loopback(asio::ip::make_address("10.1.2.3")));
  CHECK_FALSE(is_loopback(asio::ip::make_address("::")));
}

TEST_CASE("Token.OwnerOnlyFileIsRead") {
  const std::string path = token_file("  0123456789abcdef0123\n", 0600);
  CHECK(read_token_file(path) == "0123456789abcdef0123");
  std::remove(path.c_str());
}

TEST_CASE("Token.GroupOrWorldReadableFileIsRefused") {
  for (const mode_t mode : {0640, 0604, 0644, 0660}) {
    const std::string path = token_file("0123456789abcdef0123", mode);
    char m[8];
    std::snprintf(m, sizeof m, "%04o", static_cast<unsigned>(mode));
    CHECK(config_error([&] { read_token_file(path); }) ==
          "token file " + path + " is accessible by group or others (mode " + m +
              "); make it private: chmod 600 " + path);
    std::remove(path.c_str());
  }
}

TEST_CASE("Token.ShortOrMissingFileIsRefused") {
  const std::string path = token_file("short\n", 0600);
  CHECK(config_error([&] { read_token_file(path); }) ==
        "token file " + path +
            " holds 5 characters; a token needs at least 16 (e.g. head -c 32 "
            "/dev/urandom | base64 > FILE)");
  std::remove(path.c_str());
  CHECK(config_error([] { read_token_file("/nonexistent/token"); }) ==
        "token file /nonexistent/token: No such file or directory");
}

TEST_CASE("Token.FileOfAnotherUserIsRefused") {
  // A private file of another user (root can create one) is not this daemon's token.
  if (::geteuid() != 0) {
    MESSAGE("not root: cannot give a file to another user; owner check not exercised");
    return;
  }
  const std::string path = token_file("0123456789abcdef0123", 0600);
  REQUIRE(::chown(path.c_str(), 12345, 12345) == 0);
  CHECK(config_error([&] { read_token_file(path); }) ==
        "token file " + path + " is owned by uid 12345, not by this process's user (uid 0)");
  std::remove(path.c_str());
}
