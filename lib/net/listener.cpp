#include "lib/net/listener.h"

#include "lib/common/error.h"
#include "lib/common/log.h"
#include "lib/net/address.h"

namespace dbs::net {

Listener::Listener(asio::io_context& io, const tcp::endpoint& where, const std::string& what,
                   OnAccept on_accept)
    : acceptor_(io), retry_(io), on_accept_(std::move(on_accept)) {
  error_code ec;
  acceptor_.open(where.protocol(), ec);
  if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor_.bind(where, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) throw ConfigError(what + " " + to_string(where) + ": " + ec.message());
  accept();
}

tcp::endpoint Listener::local_endpoint() const {
  error_code ec;
  return acceptor_.local_endpoint(ec);
}

void Listener::stop() {
  stopped_ = true;
  error_code ignored;
  acceptor_.close(ignored);
  retry_.cancel();
}

void Listener::accept() {
  acceptor_.async_accept([this](const error_code& ec, tcp::socket socket) {
    if (stopped_ || ec == asio::error::operation_aborted) return;
    if (!ec) {
      on_accept_(std::move(socket));
      accept();
      return;
    }
    // Out of file descriptors (or another transient failure): wait instead of spinning.
    log::warn("accept failed: " + ec.message() + "; retrying in 100 ms");
    retry_.expires_after(std::chrono::milliseconds(100));
    retry_.async_wait([this](const error_code& wait_ec) {
      if (!wait_ec && !stopped_) accept();
    });
  });
}

}  // namespace dbs::net
