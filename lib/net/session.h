// One accepted TCP connection speaking newline-delimited messages (the "connection" of Asio's
// HTTP server example). Reads lines through proto::LineReader and hands each to the handler;
// queues outgoing messages and writes them in gather writes of up to 64. Runs on one
// io_context thread; no method may be called from another thread. With a TLS context the
// session first handshakes (lib/net/tls.h; bounded by hello_s like the rest of the greeting); a
// plain client on a TLS port gets one error line in clear text and is closed, and so is a TLS
// client on a plain port (its handshake then fails at once instead of waiting).
#pragma once

#include <array>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lib/net/asio.h"
#include "lib/net/tls.h"
#include "lib/proto/framing.h"
#include "lib/proto/protocol.h"

namespace dbs::net {

class LineSession;
class SessionManager;

// What the server does with a session's lines. Handlers never throw.
class SessionHandler {
 public:
  virtual ~SessionHandler() = default;
  virtual void on_line(LineSession& session, std::string_view line) = 0;
  // The session is closed (by either side or a limit); called once, from the io thread.
  virtual void on_close(LineSession& session) = 0;
};

struct SessionLimits {
  std::size_t max_message = proto::kMaxMessage;  // bytes per line
  std::size_t hello_max_message = 64 * 1024;     // bytes per line until set_registered()
  double hello_s = 10;  // set_registered() must come within this after connecting,
                        // whatever the peer sends meanwhile
  double line_s = 10;   // an unfinished line must be completed within this
  double close_s = 2;   // a closing or half-closed session that cannot flush is cut after this
  std::size_t max_queued =
      16u << 20;  // bytes waiting to be written (with each message's
                  // bookkeeping, LineSession::kEntryBytes); more drops the peer
  std::size_t max_queued_total = 256u << 20;  // the same over all sessions of the manager
};

using Message = std::shared_ptr<const std::string>;

class LineSession : public std::enable_shared_from_this<LineSession> {
 public:
  // tls == nullptr: plain TCP.
  LineSession(tcp::socket socket, ssl::context* tls, SessionHandler& handler,
              SessionManager& manager, const SessionLimits& limits, std::uint64_t id);
  LineSession(const LineSession&) = delete;
  LineSession& operator=(const LineSession&) = delete;

  void start();
  void send(Message message);
  // Sends `message` and closes once it is written (or after close_s).
  void send_and_close(Message message);
  // Sends an error message (proto::encode_error) and closes.
  void fail(proto::ErrorCode code, const std::string& message);
  void close();  // at once, dropping what is queued

  std::uint64_t id() const { return id_; }
  const std::string& peer() const { return peer_; }  // "127.0.0.1:50412"
  bool open() const { return !closed_ && !closing_; }
  // The peer authenticated: the idle limit becomes `idle_s` and lines may be max_message long.
  void set_registered(double idle_s);

  // For SessionManager's sweep: why the session must go ("" = fine), given the time now.
  std::string overdue(Clock::time_point now) const;
  bool closing_overdue(Clock::time_point now) const;

 private:
  void on_accepted(const error_code& ec, bool tls_client);
  void read();
  bool consume(std::size_t n);  // feeds n bytes of buffer_; false once the session ended
  // The peer half-closed (or closed): when its last line is still unanswered, the answer is
  // still sent (the session closes once a write leaves nothing queued, or close_s after the
  // end of its input); else the session closes now.
  void half_closed();
  void write();
  void on_write(const error_code& ec, std::size_t n);

  Stream stream_;
  SessionHandler& handler_;
  SessionManager& manager_;
  const SessionLimits& limits_;
  std::uint64_t id_;
  std::string peer_;
  proto::LineReader reader_;
  std::array<char, 4096> buffer_{};
  // A queued message costs its bytes and its entry: the shared_ptr in queue_ and the deque's
  // share of a block (a shared message, such as the daemon's heartbeat answer, is counted in
  // full for every session that queues it). Bounds count this cost, so that a flood of small
  // messages to a peer that does not read is bounded in memory, not only in payload.
  static constexpr std::size_t kEntryBytes = 2 * sizeof(Message);
  // Messages per gather write: what one writev takes (IOV_MAX is 1024 and Asio sends 64).
  static constexpr std::size_t kMaxGather = 64;
  static std::size_t cost(const Message& message);

  std::deque<Message> queue_;
  std::vector<Message> writing_;  // the gather write in flight, at most kMaxGather
  std::vector<asio::const_buffer> buffers_;
  std::size_t queued_bytes_ = 0;  // cost() of queue_ and writing_
  std::size_t writing_cost_ = 0;  // cost() of writing_
  bool writing_now_ = false, closing_ = false, closed_ = false, registered_ = false;
  bool read_closed_ = false;  // the peer shut down its sending side
  bool handshaking_ = false;  // TLS handshake (or the peek before it) under way
  bool first_read_ = true;    // nothing read yet
  bool owed_ = false;         // a line was read and nothing was sent since
  double idle_limit_s_;
  Clock::time_point started_, last_line_, partial_since_, closing_since_;
};

}  // namespace dbs::net
