// A TCP acceptor that hands every accepted socket to a callback (the "server" part of Asio's
// HTTP server example; the daemon decides what a socket becomes). One io_context thread.
#pragma once

#include <functional>

#include "lib/net/asio.h"

namespace dbs::net {

class Listener {
 public:
  using OnAccept = std::function<void(tcp::socket socket)>;
  // Binds and listens at once; throws ConfigError naming `what` when it cannot.
  Listener(asio::io_context& io, const tcp::endpoint& where, const std::string& what,
           OnAccept on_accept);
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  tcp::endpoint local_endpoint() const;
  void stop();

 private:
  void accept();

  tcp::acceptor acceptor_;
  asio::steady_timer retry_;
  OnAccept on_accept_;
  bool stopped_ = false;
};

}  // namespace dbs::net
