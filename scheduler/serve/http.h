// A small HTTP/1.1 server for /metrics, /status and / : one GET per connection, answered and
// closed. Requests are bounded in size (16 KiB of head) and time (5 s to send it, 60 s to take
// the response); at the connection limit a new request evicts the oldest one still idle.
// With a TLS context it is HTTPS (the handshake within the 5 s of the head); a plain HTTP
// request on it is answered 400 in clear text. One io_context thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <unordered_set>

#include "lib/net/asio.h"
#include "lib/net/listener.h"
#include "lib/net/tls.h"

namespace dbs::scheduler {

inline constexpr std::size_t kHttpConnections = 64;  // HTTP connections open at once

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

struct HttpRequest {
  std::string path;       // without the query
  std::string query;      // without the '?'
  bool loopback = false;  // the client's address is a loopback address
  std::string bearer;     // the token of an "Authorization: Bearer TOKEN" header ("" = none)
};

using HttpRouter = std::function<HttpResponse(const HttpRequest& request)>;

class HttpConnection;

class HttpServer {
 public:
  // tls != nullptr: HTTPS with this context (which must outlive the server).
  HttpServer(net::asio::io_context& io, const net::tcp::endpoint& where, HttpRouter router,
             net::ssl::context* tls = nullptr, std::size_t max_connections = kHttpConnections);
  net::tcp::endpoint local_endpoint() const { return listener_.local_endpoint(); }
  void stop();

 private:
  // Closes the connection that has waited longest for its request; false when every
  // connection is being answered. So idle connections cannot lock /metrics out.
  bool evict_idle();

  net::asio::io_context& io_;
  HttpRouter router_;
  net::ssl::context* tls_;
  std::size_t max_connections_;
  std::unordered_set<std::shared_ptr<HttpConnection>> owned_;  // open connections
  net::Listener listener_;
  friend class HttpConnection;
};

}  // namespace dbs::scheduler
