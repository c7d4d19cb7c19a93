#include "lib/net/client.h"

#include <algorithm>

#include "lib/common/format.h"
#include "lib/proto/codec.h"

namespace dbs::net {
namespace {

Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

}  // namespace

std::shared_ptr<LineClient> LineClient::create(asio::io_context& io, ClientOptions options,
                                               ClientCallbacks callbacks) {
  return std::make_shared<LineClient>(io, std::move(options), std::move(callbacks));
}

LineClient::LineClient(asio::io_context& io, ClientOptions options, ClientCallbacks callbacks)
    : io_(io),
      options_(std::move(options)),
      callbacks_(std::move(callbacks)),
      tls_(options_.tls_ca.empty() ? nullptr : client_context(options_.tls_ca)),
      resolver_(io),
      stream_(std::make_shared<Stream>(tcp::socket(io), tls_.get())),
      timer_(io),
      heartbeat_(io),
      reader_(options_.max_message),
      next_backoff_s_(options_.backoff_min_s),
      jitter_(std::random_device{}()) {}

void LineClient::start() {
  asio::post(io_, [self = shared_from_this()] {
    if (self->state_ == State::idle) self->attempt();
  });
}

void LineClient::stop() {
  asio::post(io_, [self = shared_from_this()] {
    self->state_ = State::stopped;
    ++self->generation_;
    self->resolver_.cancel();
    self->stream_->close();
    self->timer_.cancel();
    self->heartbeat_.cancel();
  });
}

void LineClient::reconnect_now() {
  asio::post(io_, [self = shared_from_this()] {
    if (self->state_ != State::waiting) return;
    ++self->generation_;
    self->timer_.cancel();
    self->attempt();
  });
}

void LineClient::send(std::string line) {
  if (io_.get_executor().running_in_this_thread()) {
    queue(std::move(line));
    return;
  }
  asio::post(io_, [self = shared_from_this(), line = std::move(line)]() mutable {
    self->queue(std::move(line));
  });
}

void LineClient::queue(std::string line) {
  if (state_ != State::connected) return;
  queue_.push_back(std::move(line));
  if (!writing_now_) write();
}

void LineClient::attempt() {
  state_ = State::connecting;
  const unsigned gen = ++generation_;
  reader_ = proto::LineReader(options_.max_message);
  queue_.clear();
  handshaking_ = false;
  timer_.expires_after(seconds(options_.connect_timeout_s));
  timer_.async_wait([self = shared_from_this(), gen](const error_code& ec) {
    if (ec || gen != self->generation_ || self->state_ != State::connecting) return;
    const std::string within = format_seconds(self->options_.connect_timeout_s);
    self->fail(self->handshaking_
                   ? "no TLS handshake within " + within + " (does the daemon speak TLS?)"
                   : "no connection within " + within);
  });
  resolver_.async_resolve(
      options_.server.host, std::to_string(options_.server.port),
      [self = shared_from_this(), gen](const error_code& ec, const tcp::resolver::results_type& r) {
        if (gen != self->generation_) return;
        if (ec) {
          self->fail("cannot resolve " + self->options_.server.host + ": " + ec.message());
          return;
        }
        asio::async_connect(self->stream_->socket(), r,
                            [self, gen](const error_code& cec, const tcp::endpoint&) {
                              if (gen != self->generation_) return;
                              if (cec) {
                                self->fail("cannot connect: " + cec.message());
                                return;
                              }
                              self->handshake(gen);
                            });
      });
}

void LineClient::handshake(unsigned gen) {
  handshaking_ = stream_->tls();
  stream_->connect(options_.server.host,
                   [self = shared_from_this(), gen, stream = stream_](const error_code& ec) {
                     if (gen != self->generation_) return;
                     self->handshaking_ = false;
                     if (ec) {
                       self->fail("TLS handshake with " + self->options_.server.host + ":" +
                                  std::to_string(self->options_.server.port) +
                                  " failed: " + self->stream_->handshake_error(ec));
                       return;
                     }
                     self->on_connected();
                   });
}

void LineClient::on_connected() {
  state_ = State::connected;
  timer_.cancel();
  next_backoff_s_ = options_.backoff_min_s;
  error_code ignored;
  stream_->socket().set_option(tcp::no_delay(true), ignored);
  last_sent_ = last_received_ = Clock::now();
  if (callbacks_.connected) callbacks_.connected();
  read();
  arm_heartbeat();
}

void LineClient::fail(const std::string& why) {
  if (state_ == State::stopped || state_ == State::waiting) return;
  state_ = State::waiting;
  const unsigned gen = ++generation_;
  resolver_.cancel();
  stream_->close();
  stream_ = std::make_shared<Stream>(tcp::socket(io_), tls_.get());
  heartbeat_.cancel();
  writing_now_ = false;
  queue_.clear();
  if (callbacks_.lost) callbacks_.lost(why);
  timer_.expires_after(backoff());
  timer_.async_wait([self = shared_from_this(), gen](const error_code&) {
    if (gen == self->generation_ && self->state_ == State::waiting) self->attempt();
  });
}

Clock::duration LineClient::backoff() {
  std::uniform_real_distribution<double> spread(0.8, 1.2);
  const double wait = next_backoff_s_ * spread(jitter_);
  next_backoff_s_ = std::min(options_.backoff_max_s, 2 * next_backoff_s_);
  return seconds(wait);
}

void LineClient::read() {
  const unsigned gen = generation_;
  stream_->async_read_some(
      asio::buffer(buffer_),
      [self = shared_from_this(), gen, stream = stream_](const error_code& ec, std::size_t n) {
        if (gen != self->generation_) return;
        if (ec) {
          self->fail(ec == asio::error::eof || ec == ssl::error::stream_truncated
                         ? "connection closed by the server"
                         : "connection lost: " + ec.message());
          return;
        }
        self->last_received_ = Clock::now();
        const bool ok = self->reader_.feed(std::string_view(self->buffer_.data(), n),
                                           [&](std::string_view line) {
                                             if (self->callbacks_.line) self->callbacks_.line(line);
                                             return gen == self->generation_;
                                           });
        if (gen != self->generation_) return;
        if (!ok) {
          self->fail("server sent " + self->reader_.too_long_message());
          return;
        }
        self->read();
      });
}

void LineClient::write() {
  writing_now_ = true;
  writing_.clear();
  writing_.swap(queue_);
  buffers_.clear();
  for (const auto& m : writing_) buffers_.push_back(asio::buffer(m));
  last_sent_ = Clock::now();
  const unsigned gen = generation_;
  stream_->async_write(buffers_, [self = shared_from_this(), gen, stream = stream_](
                                     const error_code& ec, std::size_t) {
    if (gen != self->generation_) return;
    self->writing_now_ = false;
    self->writing_.clear();
    if (ec) {
      self->fail("connection lost: " + ec.message());
      return;
    }
    if (!self->queue_.empty()) self->write();
  });
}

void LineClient::arm_heartbeat() {
  const unsigned gen = generation_;
  heartbeat_.expires_after(seconds(std::min(options_.heartbeat_s, options_.silence_s) / 2));
  heartbeat_.async_wait([self = shared_from_this(), gen](const error_code& ec) {
    if (ec || gen != self->generation_ || self->state_ != State::connected) return;
    const auto now = Clock::now();
    if (now - self->last_received_ > seconds(self->options_.silence_s)) {
      self->fail("server silent for " + format_seconds(self->options_.silence_s));
      return;
    }
    if (now - self->last_sent_ >= seconds(self->options_.heartbeat_s)) {
      self->queue_.push_back(proto::encode(proto::HeartbeatMsg{}));
      if (!self->writing_now_) self->write();
    }
    self->arm_heartbeat();
  });
}

}  // namespace dbs::net
