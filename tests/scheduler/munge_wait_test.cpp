// A register with a munge credential is answered once the credential is decoded, on a later turn
// of the loop (scheduler/serve/agent_handler.h), with the stand-in for munged of the session
// fuzzer (tests/fuzz/fake_munge.h): the lines a connection sends behind it wait and are handled
// in order; a refused credential drops them; too many of them end the connection; a connection
// that closes meanwhile leaves no job behind.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lib/common/log.h"
#include "lib/net/session_manager.h"
#include "lib/proto/checks.h"
#include "lib/proto/codec.h"
#include "scheduler/serve/agent_handler.h"
#include "scheduler/serve/jobs.h"
#include "tests/fuzz/fake_munge.h"

namespace {

using namespace dbs;
namespace asio = net::asio;

constexpr std::uint32_t kUid = 1001;

struct Loop {
  Loop() { log::set_level(log::Level::error); }
  asio::io_context io{1};
  scheduler::Journal journal{"", io, [](const std::string&) {}};
  scheduler::JobTable jobs{io, journal, {30, 8, 3600, 64}};
  fuzz::FakeMunge munge;
  scheduler::AgentHandler handler{io, jobs, auth(), 120};
  net::SessionManager manager{io, net::SessionLimits{}, 3600};
  std::vector<int> far_ends;

  scheduler::AuthSettings auth() {
    scheduler::AuthSettings a;
    a.munge = true;
    a.token_mode = false;
    a.munge_decode = [this](const std::string& credential) { return munge.decode(credential); };
    return a;
  }
  // A session whose peer is the far end of a socketpair (read with received()).
  std::shared_ptr<net::LineSession> open() {
    int sv[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    REQUIRE(::fcntl(sv[1], F_SETFL, O_NONBLOCK) == 0);
    far_ends.push_back(sv[1]);
    net::tcp::socket socket(io);
    net::error_code ec;
    socket.assign(net::tcp::v4(), sv[0], ec);
    REQUIRE(!ec);
    return std::make_shared<net::LineSession>(std::move(socket), nullptr, handler, manager,
                                              manager.limits(), far_ends.size());
  }
  void poll() {
    io.restart();
    io.poll();
  }
  // The "type" of each line the daemon sent to the n-th session opened (0-based) so far.
  std::vector<std::string> received(std::size_t n) {
    poll();
    std::string text;
    char buf[4096];
    ssize_t got;
    while ((got = ::read(far_ends.at(n), buf, sizeof buf)) > 0)
      text.append(buf, static_cast<std::size_t>(got));
    std::vector<std::string> types;
    for (std::size_t at = 0, nl; (nl = text.find('\n', at)) != std::string::npos; at = nl + 1) {
      const auto j = nlohmann::json::parse(text.substr(at, nl - at));
      types.push_back(j.at("type").get<std::string>() +
                      (j.contains("code") ? ":" + j["code"].get<std::string>() : ""));
      if (j.contains("message")) last_error = j["message"].get<std::string>();
    }
    return types;
  }
  std::string last_error;
  ~Loop() {
    jobs.stop();
    manager.stop_all();
    poll();
    for (const int fd : far_ends) ::close(fd);
  }
};

std::string register_line(const std::string& job, char outcome, const std::string& nonce = "") {
  Settings c;
  c.global_batch = 64;
  c.samples_per_epoch = 640;
  const std::string auth =
      proto::kMungeScheme + fuzz::fake_credential(kUid, outcome, proto::munge_payload(job, 0), nonce);
  return proto::encode(proto::RegisterMsg{job, "", 0, 1, "h", c, "", auth});
}

std::string strip(std::string line) {  // the codec's lines end in '\n'; a session hands none
  if (!line.empty() && line.back() == '\n') line.pop_back();
  return line;
}

}  // namespace

TEST_CASE("AgentHandler.MungeRegister.LinesBehindItWaitAndComeInOrder") {
  Loop loop;
  auto s = loop.open();
  loop.handler.on_line(*s, strip(register_line("held", 'v')));
  loop.handler.on_line(*s, strip(proto::encode(proto::HeartbeatMsg{})));
  CHECK(loop.jobs.jobs().empty());  // nothing registered before the loop turns
  // The heartbeat is answered, not refused with "register first"; a new job's first plan goes
  // out once its journal entry is written, after the lines already read.
  auto types = loop.received(0);
  std::sort(types.begin(), types.end());
  CHECK(types == std::vector<std::string>{"heartbeat", "plan"});
  CHECK(loop.jobs.jobs().count("held") == 1);
  CHECK(loop.jobs.jobs().at("held")->owner == kUid);
  CHECK(loop.handler.messages() == 2);
}

TEST_CASE("AgentHandler.MungeRegister.RefusedDropsTheLinesBehindIt") {
  Loop loop;
  auto s = loop.open();
  loop.handler.on_line(*s, strip(register_line("forged", 'i')));
  loop.handler.on_line(*s, strip(proto::encode(proto::HeartbeatMsg{})));
  const auto types = loop.received(0);
  REQUIRE(types.size() == 1);
  CHECK(types[0] == "error:auth");
  CHECK(loop.last_error.find("(job 'forged', rank 0)") != std::string::npos);
  CHECK(!s->open());
  CHECK(loop.jobs.jobs().empty());
}

TEST_CASE("AgentHandler.MungeRegister.TooMuchBehindItEndsTheConnection") {
  Loop loop;
  auto s = loop.open();
  loop.handler.on_line(*s, strip(register_line("flood", 'v')));
  const std::string beat = strip(proto::encode(proto::HeartbeatMsg{}));
  std::size_t sent = 0;
  while (s->open() && sent < 10'000) {
    loop.handler.on_line(*s, beat);
    ++sent;
  }
  CHECK(!s->open());
  // Each held line costs its bytes and 64: the limit falls after about 64 KiB / (size + 64).
  CHECK(sent == scheduler::AgentHandler::kMaxHeld / (beat.size() + 64) + 1);
  const auto types = loop.received(0);
  REQUIRE(types.size() == 1);
  CHECK(types[0] == "error:limit");
  CHECK(loop.last_error == "more than 64 KiB sent before the register was answered");
  CHECK(loop.jobs.jobs().empty());
}

TEST_CASE("AgentHandler.MungeRegister.ConnectionGoneBeforeTheAnswer") {
  Loop loop;
  auto s = loop.open();
  loop.handler.on_line(*s, strip(register_line("gone", 'v')));
  s->close();
  loop.poll();
  CHECK(loop.jobs.jobs().empty());
  // The next connection registers as usual (the credential is another: munged takes one once).
  auto t = loop.open();
  loop.handler.on_line(*t, strip(register_line("gone", 'v', "2")));
  const auto types = loop.received(1);
  REQUIRE(types.size() == 1);
  CHECK(types[0] == "plan");
}

TEST_CASE("AgentHandler.MungeRegister.ASecondRegisterBehindTheFirstIsRefused") {
  Loop loop;
  auto s = loop.open();
  loop.handler.on_line(*s, strip(register_line("twice", 'v')));
  loop.handler.on_line(*s, strip(proto::encode(proto::HeartbeatMsg{})));
  loop.handler.on_line(*s, strip(register_line("twice", 'v', "2")));
  // In order: the heartbeat answered, then the second register refused (the connection ends
  // before the job's first plan goes out).
  const auto types = loop.received(0);
  CHECK(types == std::vector<std::string>{"heartbeat", "error:state"});
  CHECK(loop.last_error == "already registered as rank 0 of job 'twice'");
}
