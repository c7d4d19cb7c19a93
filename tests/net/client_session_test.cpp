// lib/net: sessions with their limits, and the reconnecting client, against each other on
// 127.0.0.1 (ephemeral ports, every wait bounded).
#include <doctest/doctest.h>
#include <sys/socket.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "lib/net/client.h"
#include "lib/net/listener.h"
#include "lib/net/session_manager.h"
#include "tests/net/socket_client.h"

namespace {

using namespace dbs::net;
using namespace std::chrono_literals;

// Echoes every line but heartbeats, which it only counts, and "flood", which it answers with
// 10,000 copies of one shared two-byte line.
class Echo : public SessionHandler {
 public:
  void on_line(LineSession& s, std::string_view line) override {
    std::lock_guard lock(mutex);
    if (line == "flood") {
      const auto x = std::make_shared<const std::string>("x\n");
      for (int i = 0; i < 10000 && s.open(); ++i) s.send(x);
      return;
    }
    if (line.find("heartbeat") != std::string_view::npos) {
      ++heartbeats;
      return;
    }
    s.send(std::make_shared<const std::string>(std::string(line) + "\n"));
  }
  void on_close(LineSession&) override { ++closed; }
  std::mutex mutex;
  int heartbeats = 0;
  std::atomic<int> closed{0};
};

struct Server {
  explicit Server(SessionLimits limits, std::uint16_t port = 0)
      : sessions(io, limits, 0.05),
        listener(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), "test",
                 [this](tcp::socket s) { sessions.start(std::move(s), echo); }),
        thread([this] { io.run(); }) {}
  ~Server() {
    asio::post(io, [this] {
      listener.stop();
      sessions.stop_all();
    });
    thread.join();
  }
  std::uint16_t port() const { return listener.local_endpoint().port(); }
  asio::io_context io;
  Echo echo;
  SessionManager sessions;
  Listener listener;
  std::thread thread;
};

// A LineClient on its own io thread, recording what happens.
struct Client {
  explicit Client(ClientOptions o) {
    client = LineClient::create(
        io, o,
        {[this] { note([&] { ++connected; }); },
         [this](std::string_view l) { note([&] { lines.emplace_back(l); }); },
         [this](const std::string& why) { note([&] { lost.push_back(why); }); }});
    client->start();
    thread = std::thread([this] {
      auto guard = asio::make_work_guard(io);
      io.run();
    });
  }
  ~Client() {
    client->stop();
    io.stop();
    thread.join();
  }
  template <typename F>
  void note(F f) {
    {
      std::lock_guard lock(mutex);
      f();
    }
    changed.notify_all();
  }
  // Waits up to 5 s for pred() (called under the lock).
  template <typename P>
  bool wait(P pred) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, 5s, pred);
  }
  asio::io_context io;
  std::shared_ptr<LineClient> client;
  std::thread thread;
  std::mutex mutex;
  std::condition_variable changed;
  int connected = 0;
  std::vector<std::string> lines, lost;
};

ClientOptions options_for(std::uint16_t port) {
  ClientOptions o;
  o.server = {"127.0.0.1", port};
  o.backoff_min_s = 0.02;
  o.backoff_max_s = 0.1;
  o.connect_timeout_s = 0.5;
  return o;
}

// A port with nothing listening: bind, read the port, close.
std::uint16_t free_port() {
  asio::io_context io;
  tcp::acceptor a(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  return a.local_endpoint().port();
}

}  // namespace

TEST_CASE("Session.EchoesLinesInOrder") {
  Server server({});
  dbs::test::SocketClient c(server.port());
  c.send("one\ntw");
  c.send("o\nthree\n");
  CHECK(c.line() == "one");
  CHECK(c.line() == "two");
  CHECK(c.line() == "three");
}

TEST_CASE("Session.OversizedLineGetsAnErrorAndIsClosed") {
  SessionLimits limits;
  limits.max_message = 64;
  Server server(limits);
  dbs::test::SocketClient bad(server.port()), good(server.port());
  bad.send(std::string(66, 'x'));  // no newline needed: the limit is enforced as bytes come
  CHECK(bad.line() ==
        R"({"v":2,"type":"error","code":"too_long","message":"message longer than 64 bytes"})");
  CHECK(bad.closed_within());
  good.send(std::string(64, 'y') + "\n");
  CHECK(good.line() == std::string(64, 'y'));
}

TEST_CASE("Session.UnfinishedLineIsDroppedAfterTheLineTimeout") {
  SessionLimits limits;
  limits.line_s = 0.2;
  limits.hello_s = 30;
  Server server(limits);
  dbs::test::SocketClient slow(server.port());
  slow.send("{\"v\":2,");  // and never the rest
  CHECK(
      slow.line(3) ==
      R"({"v":2,"type":"error","code":"timeout","message":"message not completed within 0.2 s"})");
  CHECK(slow.closed_within());
  CHECK(server.sessions.timed_out() == 1);
}

TEST_CASE("Session.SilentClientIsDroppedAfterTheIdleLimit") {
  SessionLimits limits;
  limits.hello_s = 0.2;
  Server server(limits);
  dbs::test::SocketClient quiet(server.port());
  CHECK(quiet.line(3) ==
        R"({"v":2,"type":"error","code":"timeout","message":"no message for 0.2 s"})");
  CHECK(quiet.closed_within());
}

TEST_CASE("Client.ConnectsSendsAndReceives") {
  Server server({});
  Client c(options_for(server.port()));
  REQUIRE(c.wait([&] { return c.connected == 1; }));
  c.client->send("ping\n");
  CHECK(c.wait([&] { return c.lines.size() == 1; }));
  CHECK(c.lines.at(0) == "ping");
}

TEST_CASE("Client.ReconnectsWithBackoffUntilTheServerComes") {
  const std::uint16_t port = free_port();
  Client c(options_for(port));
  CHECK(c.wait([&] { return c.lost.size() >= 3; }));  // refused, waits, tries again
  CHECK(c.lost.at(0).find("cannot connect") == 0);
  Server server({}, port);
  CHECK(c.wait([&] { return c.connected == 1; }));
  c.client->send("ping\n");  // the echo proves the server holds the session
  CHECK(c.wait([&] { return c.lines.size() == 1; }));
  server.io.post([&] { server.sessions.stop_all(); });  // the server drops everyone
  CHECK(c.wait([&] { return c.connected == 2; }));      // and the client comes back
}

TEST_CASE("Client.SendsHeartbeatsWhenQuiet") {
  Server server({});
  ClientOptions o = options_for(server.port());
  o.heartbeat_s = 0.05;
  Client c(o);
  REQUIRE(c.wait([&] { return c.connected == 1; }));
  bool beat = false;
  for (int i = 0; i < 100 && !beat; ++i) {
    std::this_thread::sleep_for(20ms);
    std::lock_guard lock(server.echo.mutex);
    beat = server.echo.heartbeats >= 2;
  }
  CHECK(beat);
}

TEST_CASE("Client.SilentServerCountsAsLost") {
  Server server({});  // echoes, but heartbeats get no answer
  ClientOptions o = options_for(server.port());
  o.heartbeat_s = 0.05;
  o.silence_s = 0.3;
  Client c(o);
  CHECK(c.wait([&] { return !c.lost.empty(); }));
  CHECK(c.lost.at(0) == "server silent for 0.3 s");
}

TEST_CASE("Client.ConnectTimesOutWhenNobodyAnswers") {
  // A listener with a full accept queue drops further SYNs: connecting hangs until the timeout.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(fd, 0) == 0);
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  const std::uint16_t port = ntohs(a.sin_port);
  dbs::test::SocketClient fills_the_queue(port);
  ClientOptions o = options_for(port);
  o.connect_timeout_s = 0.2;
  Client c(o);
  CHECK(c.wait([&] { return !c.lost.empty(); }));
  CHECK(c.lost.at(0) == "no connection within 0.2 s");
  ::close(fd);
}

TEST_CASE("Session.QueuedSmallMessagesCountTheirEntries") {
  // 10,000 queued two-byte messages are 20 KB of payload but more than 64 KiB of memory (an
  // entry each): a peer that gets them faster than they can be written is dropped at 64 KiB.
  SessionLimits limits;
  limits.max_queued = 64u << 10;
  Server server(limits);
  dbs::test::SocketClient c(server.port());
  c.send("flood\n");
  for (int i = 0; i < 100 && server.echo.closed < 1; ++i) std::this_thread::sleep_for(20ms);
  CHECK(server.echo.closed == 1);
}

TEST_CASE("Session.QueuedBytesAreBoundedOverAllSessions") {
  // Clients that send and never read: their echoes queue up in the server until the total
  // bound drops the connection that would pass it; the server stays small and serves others.
  SessionLimits limits;
  limits.max_queued_total = 2u << 20;
  Server server(limits);
  const std::string line = std::string(60000, 'x') + "\n";
  std::vector<std::unique_ptr<dbs::test::SocketClient>> greedy;
  for (int c = 0; c < 4; ++c) {
    greedy.push_back(std::make_unique<dbs::test::SocketClient>(server.port()));
    for (int i = 0; i < 200 && greedy.back()->send(line); ++i) {
    }
  }
  for (int i = 0; i < 100 && server.echo.closed < 1; ++i) std::this_thread::sleep_for(20ms);
  CHECK(server.echo.closed >= 1);
  std::promise<std::size_t> queued;
  asio::post(server.io, [&] { queued.set_value(server.sessions.queued()); });
  CHECK(queued.get_future().get() <= limits.max_queued_total);
  greedy.clear();
  dbs::test::SocketClient polite(server.port());
  polite.send("hello\n");
  CHECK(polite.line() == "hello");
}
