// A line client that stays connected: connects with a timeout, reconnects with exponential
// backoff (with jitter, so many agents do not return in step) after any failure, sends a
// heartbeat when it has been quiet, and treats a silent server as gone. Runs on an io_context
// the owner drives from one thread; the public methods may be called from any thread. With a CA
// file it speaks TLS, verifying the server's certificate against that CA and the host name of
// `server`; the handshake is part of an attempt (within connect_timeout_s).
#pragma once

#include <functional>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "lib/net/address.h"
#include "lib/net/asio.h"
#include "lib/net/tls.h"
#include "lib/proto/framing.h"

namespace dbs::net {

struct ClientOptions {
  HostPort server;               // where the daemon listens
  double connect_timeout_s = 2;  // one attempt (resolve + connect)
  double backoff_min_s = 0.1;    // first wait after a failure
  double backoff_max_s = 5;      // longest wait between attempts
  double heartbeat_s = 10;       // send a heartbeat after this long without sending
  double silence_s = 35;         // reconnect after this long without receiving
  std::size_t max_message = proto::kMaxMessage;
  std::string tls_ca;  // PEM CA file: TLS, the server verified against it; "" = plain
};

struct ClientCallbacks {
  std::function<void()> connected;                   // send the greeting from here
  std::function<void(std::string_view line)> line;   // a message from the server
  std::function<void(const std::string& why)> lost;  // attempt failed or connection lost
};

class LineClient : public std::enable_shared_from_this<LineClient> {
 public:
  static std::shared_ptr<LineClient> create(asio::io_context& io, ClientOptions options,
                                            ClientCallbacks callbacks);
  // Throws ConfigError when options.tls_ca cannot be read.
  LineClient(asio::io_context& io, ClientOptions options, ClientCallbacks callbacks);

  void start();  // first attempt now
  // Dropped when not connected (the greeting resends state). From the io thread (the connected
  // callback) queued at once, so that the greeting goes out before any line another thread
  // sends meanwhile; from another thread posted to the io thread.
  void send(std::string line);
  void reconnect_now();  // skip the backoff wait if one is running
  void stop();           // close, no more attempts

 private:
  void attempt();
  void handshake(unsigned gen);
  void on_connected();
  void queue(std::string line);  // on the io thread: send() now
  void fail(const std::string& why);
  void read();
  void write();
  void arm_heartbeat();
  Clock::duration backoff();

  asio::io_context& io_;
  ClientOptions options_;
  ClientCallbacks callbacks_;
  TlsContext tls_;  // null: plain TCP
  tcp::resolver resolver_;
  // A new one per attempt; its handlers hold it, so a closed one lives until they ran.
  std::shared_ptr<Stream> stream_;
  asio::steady_timer timer_;  // connect deadline, then backoff wait
  asio::steady_timer heartbeat_;
  proto::LineReader reader_;
  std::array<char, 8192> buffer_{};
  std::vector<std::string> queue_, writing_;
  std::vector<asio::const_buffer> buffers_;
  enum class State { idle, connecting, connected, waiting, stopped } state_ = State::idle;
  bool writing_now_ = false;
  bool handshaking_ = false;  // connected, TLS handshake under way
  unsigned generation_ = 0;   // bumped per attempt: stale handlers do nothing
  double next_backoff_s_;
  Clock::time_point last_sent_, last_received_;
  std::mt19937 jitter_;
};

}  // namespace dbs::net
