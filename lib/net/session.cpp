#include "lib/net/session.h"

#include <algorithm>

#include "lib/common/format.h"
#include "lib/common/log.h"
#include "lib/net/address.h"
#include "lib/net/session_manager.h"
#include "lib/proto/codec.h"

namespace dbs::net {

LineSession::LineSession(tcp::socket socket, ssl::context* tls, SessionHandler& handler,
                         SessionManager& manager, const SessionLimits& limits, std::uint64_t id)
    : stream_(std::move(socket), tls),
      handler_(handler),
      manager_(manager),
      limits_(limits),
      id_(id),
      reader_(std::min(limits.max_message, limits.hello_max_message)),
      idle_limit_s_(limits.hello_s),
      started_(Clock::now()),
      last_line_(started_) {
  error_code ec;
  const auto remote = stream_.socket().remote_endpoint(ec);
  peer_ = ec ? "?" : to_string(remote);
  stream_.socket().set_option(tcp::no_delay(true), ec);
}

void LineSession::start() {
  if (!stream_.tls()) {
    read();
    return;
  }
  handshaking_ = true;
  stream_.accept([self = shared_from_this()](const error_code& ec, bool tls_client) {
    self->on_accepted(ec, tls_client);
  });
}

void LineSession::on_accepted(const error_code& ec, bool tls_client) {
  handshaking_ = false;
  if (closed_ || closing_) return;
  if (!tls_client) {  // the stream is plain now: say why in words the client can read
    fail(proto::ErrorCode::malformed,
         "this port speaks TLS: connect with TLS (dbs-agent --tls-ca FILE)");
    return;
  }
  if (ec) {
    if (ec != asio::error::operation_aborted)
      log::info("TLS handshake with " + peer_ + " failed: " + stream_.handshake_error(ec));
    close();
    return;
  }
  read();
}

void LineSession::read() {
  stream_.async_read_some(asio::buffer(buffer_),
                          [self = shared_from_this()](const error_code& ec, std::size_t n) {
                            if (self->closed_ || self->closing_) return;
                            if (ec == asio::error::eof && !self->reader_.partial()) {
                              self->half_closed();  // the peer is done sending, not reading
                              return;
                            }
                            if (ec) {  // reset, or operation_aborted at shutdown
                              self->close();
                              return;
                            }
                            if (self->consume(n)) self->read();
                          });
}

bool LineSession::consume(std::size_t n) {
  if (first_read_ && n > 0 && !stream_.tls() &&
      static_cast<unsigned char>(buffer_[0]) == kTlsHandshakeRecord) {
    // A TLS ClientHello on a plain port: the client's handshake fails on this answer at once.
    fail(proto::ErrorCode::malformed, "this port speaks plain TCP, not TLS");
    return false;
  }
  first_read_ = false;
  const bool had_partial = reader_.partial();
  const bool ok = reader_.feed(std::string_view(buffer_.data(), n), [this](std::string_view line) {
    last_line_ = Clock::now();
    owed_ = true;
    handler_.on_line(*this, line);
    return open();
  });
  if (!ok) {
    fail(proto::ErrorCode::too_long, reader_.too_long_message());
    return false;
  }
  if (!open()) return false;
  if (reader_.partial() && (!had_partial || last_line_ > partial_since_))
    partial_since_ = Clock::now();
  return true;
}

void LineSession::half_closed() {
  read_closed_ = true;
  closing_since_ = Clock::now();
  if (!owed_ && !writing_now_ && queue_.empty()) close();
}

void LineSession::set_registered(double idle_s) {
  registered_ = true;
  idle_limit_s_ = idle_s;
  reader_.set_max_line(limits_.max_message);
}

std::size_t LineSession::cost(const Message& message) {
  return message->size() + kEntryBytes;
}

void LineSession::send(Message message) {
  if (closed_ || closing_) return;
  const std::size_t n = cost(message);
  if (queued_bytes_ + n > limits_.max_queued || !manager_.reserve_queued(n)) {
    close();  // the peer does not read, or all peers together hold too much: nothing to tell it
    return;
  }
  queued_bytes_ += n;
  owed_ = false;  // whatever goes out after a line answers it
  queue_.push_back(std::move(message));
  if (!writing_now_) write();
}

void LineSession::send_and_close(Message message) {
  send(std::move(message));
  if (closed_ || closing_) return;
  closing_ = true;
  closing_since_ = Clock::now();
  stream_.shutdown(tcp::socket::shutdown_receive);
  if (!writing_now_) close();
}

void LineSession::fail(proto::ErrorCode code, const std::string& message) {
  if (handshaking_) {  // nothing can be sent before the handshake ends
    close();
    return;
  }
  send_and_close(std::make_shared<const std::string>(proto::encode_error(code, message)));
}

void LineSession::write() {
  writing_now_ = true;
  writing_cost_ = 0;
  while (!queue_.empty() && writing_.size() < kMaxGather) {
    writing_cost_ += cost(queue_.front());
    writing_.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  auto done = [self = shared_from_this()](const error_code& ec, std::size_t n) {
    self->on_write(ec, n);
  };
  if (writing_.size() == 1) {
    stream_.async_write(asio::buffer(*writing_.front()), std::move(done));
    return;
  }
  buffers_.clear();
  for (const auto& m : writing_) buffers_.push_back(asio::buffer(*m));
  stream_.async_write(buffers_, std::move(done));
}

void LineSession::on_write(const error_code& ec, std::size_t) {
  writing_now_ = false;
  writing_.clear();
  // Written, or failed (then close() below releases the rest): what the batch held is free.
  const std::size_t sent = closed_ ? queued_bytes_ : std::min(queued_bytes_, writing_cost_);
  queued_bytes_ -= sent;
  manager_.release_queued(sent);
  if (closed_) return;
  if (ec) {
    close();
    return;
  }
  if (!queue_.empty()) {
    write();
  } else if (closing_ || (read_closed_ && !owed_)) {
    stream_.shutdown(tcp::socket::shutdown_both);
    close();
  }
}

void LineSession::close() {
  if (closed_) return;
  closed_ = true;
  stream_.close();
  queue_.clear();
  if (!writing_now_) {  // else on_write releases what the write in flight holds
    manager_.release_queued(queued_bytes_);
    queued_bytes_ = 0;
  }
  handler_.on_close(*this);
  manager_.remove(this);
}

std::string LineSession::overdue(Clock::time_point now) const {
  if (closed_ || closing_ || read_closed_) return "";
  if (reader_.partial() && now - partial_since_ > std::chrono::duration<double>(limits_.line_s))
    return "message not completed within " + format_seconds(limits_.line_s);
  if (now - last_line_ > std::chrono::duration<double>(idle_limit_s_))
    return "no message for " + format_seconds(idle_limit_s_);
  if (!registered_ && now - started_ > std::chrono::duration<double>(limits_.hello_s))
    return "not registered within " + format_seconds(limits_.hello_s);
  return "";
}

bool LineSession::closing_overdue(Clock::time_point now) const {
  return (closing_ || read_closed_) && !closed_ &&
         now - closing_since_ > std::chrono::duration<double>(limits_.close_s);
}

}  // namespace dbs::net
