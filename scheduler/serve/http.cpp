#include "scheduler/serve/http.h"

#include <array>
#include <cctype>
#include <vector>

#include "lib/net/address.h"

namespace dbs::scheduler {

using net::error_code;
namespace asio = net::asio;

namespace {

// The token of the head's "Authorization: Bearer TOKEN" line (header names ignore case).
std::string bearer_of(const std::string& head) {
  std::size_t at = head.find("\r\n");
  while (at != std::string::npos && at + 2 < head.size()) {
    const std::size_t start = at + 2, end = head.find("\r\n", start);
    const std::string line = head.substr(start, end == std::string::npos ? end : end - start);
    const std::string name = "authorization:";
    bool match = line.size() > name.size();
    for (std::size_t i = 0; match && i < name.size(); ++i)
      match = std::tolower(static_cast<unsigned char>(line[i])) == name[i];
    if (match) {
      std::string value = line.substr(name.size());
      value.erase(0, value.find_first_not_of(' '));
      if (value.rfind("Bearer ", 0) == 0) {
        value.erase(0, 7);
        while (!value.empty() && value.back() == ' ') value.pop_back();
        return value;
      }
    }
    at = end;
  }
  return "";
}

}  // namespace

class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
 public:
  HttpConnection(net::tcp::socket socket, HttpServer& server)
      : stream_(std::move(socket), server.tls_),
        timer_(stream_.socket().get_executor()),
        server_(server) {}

  void start() {
    timer_.expires_after(kHeadTime);
    timer_.async_wait([self = shared_from_this()](const error_code& ec) {
      if (!ec) self->close();  // too slow
    });
    stream_.accept([self = shared_from_this()](const error_code& ec, bool tls_client) {
      if (self->closed_) return;
      if (!tls_client) {
        self->respond({400, "text/plain; charset=utf-8",
                       "this port speaks HTTPS: use https:// with the daemon's CA\n"},
                      false);
      } else if (ec) {
        self->close();
      } else {
        self->read_head();
      }
    });
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    timer_.cancel();
    stream_.close();
    server_.owned_.erase(shared_from_this());
  }

  // Still waiting for its request: the first to go when the server is full.
  bool idle() const { return !responding_ && !closed_; }
  net::Clock::time_point since() const { return since_; }

 private:
  static constexpr auto kHeadTime = std::chrono::seconds(5);    // to send the request head
  static constexpr auto kWriteTime = std::chrono::seconds(60);  // to take the response

  static constexpr std::size_t kMaxHead = 16384;  // bytes of request head

  // Reads until the blank line that ends the head.
  void read_head() {
    stream_.async_read_some(asio::buffer(chunk_), [self = shared_from_this()](const error_code& ec,
                                                                              std::size_t n) {
      if (self->closed_) return;
      if (ec) {
        self->close();
        return;
      }
      self->head_.append(self->chunk_.data(), n);
      const auto end = self->head_.find("\r\n\r\n");
      if (end == std::string::npos || end + 4 > kMaxHead) {
        if (self->head_.size() < kMaxHead) {
          self->read_head();
        } else {
          self->respond({431, "text/plain; charset=utf-8", "request header too large\n"}, false);
        }
        return;
      }
      self->on_head();
    });
  }

  void on_head() {
    // "GET /path?query HTTP/1.1"
    const auto line_end = head_.find("\r\n");
    const std::string line = head_.substr(0, line_end);
    const auto sp1 = line.find(' '), sp2 = line.rfind(' ');
    if (sp1 == std::string::npos || sp2 == sp1 || line.compare(sp2 + 1, 5, "HTTP/") != 0) {
      respond({400, "text/plain; charset=utf-8", "bad request\n"}, false);
      return;
    }
    const std::string method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    if (method != "GET" && method != "HEAD") {
      respond({405, "text/plain; charset=utf-8", "only GET and HEAD\n"}, false);
      return;
    }
    const auto q = target.find('?');
    HttpRequest request;
    request.path = target.substr(0, q);
    request.query = q == std::string::npos ? "" : target.substr(q + 1);
    error_code ec2;
    const auto remote = stream_.socket().remote_endpoint(ec2);
    request.loopback = !ec2 && net::is_loopback(remote.address());
    request.bearer = bearer_of(head_);
    HttpResponse r = server_.router_(request);
    respond(std::move(r), method == "HEAD");
  }

  void respond(HttpResponse r, bool head_only) {
    responding_ = true;
    timer_.expires_after(kWriteTime);  // a large body to a slow reader is not cut at kHeadTime
    timer_.async_wait([self = shared_from_this()](const error_code& ec) {
      if (!ec) self->close();
    });
    const char* reason = r.status == 200   ? "OK"
                         : r.status == 404 ? "Not Found"
                         : r.status == 405 ? "Method Not Allowed"
                         : r.status == 431 ? "Request Header Fields Too Large"
                                           : "Bad Request";
    out_ = "HTTP/1.1 " + std::to_string(r.status) + " " + reason +
           "\r\nContent-Type: " + r.content_type +
           "\r\nContent-Length: " + std::to_string(r.body.size()) +
           "\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n";
    if (!head_only) out_ += r.body;
    stream_.async_write(
        asio::buffer(out_), [self = shared_from_this()](const error_code& ec, std::size_t) {
          if (ec || self->closed_) {
            self->close();
            return;
          }
          self->stream_.async_shutdown([self] {  // TLS: close_notify, within kWriteTime
            self->stream_.shutdown(net::tcp::socket::shutdown_both);
            self->close();
          });
        });
  }

  net::Stream stream_;
  asio::steady_timer timer_;
  HttpServer& server_;
  std::string head_, out_;
  std::array<char, 4096> chunk_{};
  bool closed_ = false, responding_ = false;
  net::Clock::time_point since_ = net::Clock::now();
};

HttpServer::HttpServer(asio::io_context& io, const net::tcp::endpoint& where, HttpRouter router,
                       net::ssl::context* tls, std::size_t max_connections)
    : io_(io),
      router_(std::move(router)),
      tls_(tls),
      max_connections_(max_connections),
      listener_(io, where, "--http", [this](net::tcp::socket socket) {
        if (owned_.size() >= max_connections_ && !evict_idle()) {
          error_code ignored;
          socket.close(ignored);
          return;
        }
        auto c = std::make_shared<HttpConnection>(std::move(socket), *this);
        owned_.insert(c);
        c->start();
      }) {}

bool HttpServer::evict_idle() {
  std::shared_ptr<HttpConnection> oldest;
  for (const auto& c : owned_)
    if (c->idle() && (!oldest || c->since() < oldest->since())) oldest = c;
  if (!oldest) return false;
  oldest->close();
  return true;
}

void HttpServer::stop() {
  listener_.stop();
  std::vector<std::shared_ptr<HttpConnection>> all(owned_.begin(), owned_.end());
  for (const auto& c : all) c->close();
}

}  // namespace dbs::scheduler
