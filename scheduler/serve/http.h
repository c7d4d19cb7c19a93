// A small HTTP/1.1 server for /metrics, /status and / : one GET per connection, answered and
// closed. Requests are bounded in size (16 KiB of head) and time (5 s), connections in number.
// One io_context thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <unordered_set>

#include "lib/net/asio.h"
#include "lib/net/listener.h"

namespace dbs::scheduler {

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

// path without the query; query without the '?'.
using HttpRouter = std::function<HttpResponse(const std::string& path, const std::string& query)>;

class HttpConnection;

class HttpServer {
 public:
  HttpServer(net::asio::io_context& io, const net::tcp::endpoint& where, HttpRouter router,
             std::size_t max_connections = 64);
  net::tcp::endpoint local_endpoint() const { return listener_.local_endpoint(); }
  void stop();

 private:
  net::asio::io_context& io_;
  HttpRouter router_;
  std::size_t max_connections_;
  std::unordered_set<std::shared_ptr<HttpConnection>> owned_;  // open connections
  net::Listener listener_;
  friend class HttpConnection;
};

}  // namespace dbs::scheduler
