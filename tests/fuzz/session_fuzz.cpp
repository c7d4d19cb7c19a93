// libFuzzer target: the daemon's handlers in process, fed message sequences on several
// connections while a good 2-rank job runs alongside. No network: each session's socket is
// one end of a socketpair whose other end never reads (what the daemon sends is written and
// dropped) and the io_context is polled between steps.
//
// Input: records separated by '\n'. A record's first byte b picks connection b % 4 and an
// action (b / 4) % 4: 0 = the rest of the record is a line from that connection (a new
// connection if it has none), 1 = that connection closes, 2 = 2 us pass, 3 = the good job runs
// one epoch. The report timeout is 1 us, so any poll may also plan at the timeout.
//
// The daemon takes the token, job keys and munge credentials (serve --auth token,munge); munged
// is the stand-in of fake_munge.h, so a line may present any uid's credential, valid, expired,
// invalid, replayed or for another job or rank. The good job belongs to uid 1001: its ranks
// registered with fake credentials of that uid.
//
// Invariants, checked after every record (abort on failure): the good job's plan is one an
// agent accepts; when both good ranks still hold their slots, an epoch of reports moves the job
// on by one epoch; the good job still belongs to uid 1001; a connection that takes a rank of it
// presented the token or a key (no credential was decoded), or a valid credential of uid 1001 or
// root bound to that rank of that job; the views render.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "lib/common/log.h"
#include "lib/net/session_manager.h"
#include "lib/proto/checks.h"
#include "lib/proto/codec.h"
#include "scheduler/serve/agent_handler.h"
#include "scheduler/serve/jobs.h"
#include "scheduler/serve/views.h"
#include "tests/fuzz/fake_munge.h"

namespace {

using namespace dbs;
namespace asio = net::asio;

constexpr const char* kToken = "fuzz-daemon-token-0123456789";
constexpr std::uint32_t kOwner = 1001;  // the good job's uid

void check(bool ok) {
  if (!ok) std::abort();
}

scheduler::AuthSettings auth_with(fuzz::FakeMunge& munge) {
  scheduler::AuthSettings a;
  a.token = kToken;
  a.munge = true;
  a.munge_decode = [&munge](const std::string& credential) { return munge.decode(credential); };
  return a;
}

struct World {
  asio::io_context io{1};
  scheduler::Journal journal{"", io, [](const std::string&) {}};
  scheduler::JobTable jobs{io, journal, {1e-6, 8, 3600, 64}};
  fuzz::FakeMunge munge;
  scheduler::AgentHandler handler{io, jobs, auth_with(munge), 120};
  net::SessionManager manager{io, net::SessionLimits{}, 3600};
  std::uint64_t next_id = 1;
  std::shared_ptr<net::LineSession> conn[4], good[2];

  std::vector<int> far_ends;

  std::shared_ptr<net::LineSession> open() {
    int sv[2];
    check(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    far_ends.push_back(sv[1]);
    net::tcp::socket socket(io);
    net::error_code ec;
    socket.assign(net::tcp::v4(), sv[0], ec);
    check(!ec);
    return std::make_shared<net::LineSession>(std::move(socket), nullptr, handler, manager,
                                              manager.limits(), next_id++);
  }
  void poll() {
    io.restart();
    io.poll();
  }
  void line(const std::shared_ptr<net::LineSession>& s, const std::string& text);
  ~World() {
    for (auto& s : conn)
      if (s) s->close();
    for (auto& s : good)
      if (s) s->close();
    jobs.stop();
    manager.stop_all();
    poll();
    for (const int fd : far_ends) ::close(fd);
  }
};

const scheduler::LiveJob* good_job(const World& w) {
  const auto it = w.jobs.jobs().find("good");
  return it == w.jobs.jobs().end() ? nullptr : it->second.get();
}

// The good job's ranks that session s holds.
std::vector<int> ranks_held(const World& w, const net::LineSession* s) {
  std::vector<int> ranks;
  if (const scheduler::LiveJob* live = good_job(w))
    for (std::size_t r = 0; r < live->sessions.size(); ++r)
      if (live->sessions[r] == s) ranks.push_back(static_cast<int>(r));
  return ranks;
}

void World::line(const std::shared_ptr<net::LineSession>& s, const std::string& text) {
  if (!s->open()) return;
  const std::vector<int> before = ranks_held(*this, s.get());
  munge.reset();
  handler.on_line(*s, text);
  poll();
  // A rank of the good job newly taken by s: only its owner, root or the admin may take it.
  for (const int r : ranks_held(*this, s.get())) {
    if (std::find(before.begin(), before.end(), r) != before.end()) continue;
    if (!munge.called()) continue;  // the token or a job key (the admin)
    const auto& id = munge.last();
    check(id.has_value() && (id->uid == kOwner || id->uid == 0) &&
          id->payload == proto::munge_payload("good", r));
  }
}

void start_good(World& w) {
  Settings c;
  c.global_batch = 64;
  c.samples_per_epoch = 640;
  for (int r = 0; r < 2; ++r) {
    w.good[r] = w.open();
    const std::string auth =
        proto::kMungeScheme + fuzz::fake_credential(kOwner, 'v', proto::munge_payload("good", r));
    w.line(w.good[r], proto::encode(proto::RegisterMsg{"good", "", r, 2, "g", c, "", auth}));
  }
  const scheduler::LiveJob* live = good_job(w);
  check(live != nullptr && live->owner == kOwner && live->sessions[0] == w.good[0].get() &&
        live->sessions[1] == w.good[1].get());
}

void good_epoch(World& w) {
  const scheduler::LiveJob* live = good_job(w);
  check(live != nullptr);
  const bool held = live->sessions[0] == w.good[0].get() && live->sessions[1] == w.good[1].get();
  if (!held || live->finished) return;
  const Plan before = live->job->current();
  for (int r = 0; r < 2; ++r) {
    Report rep;
    rep.rank = r;
    rep.epoch = before.epoch;
    rep.batch = before.batch[static_cast<std::size_t>(r)];
    rep.samples = 10L * rep.batch;
    rep.steps = 10;
    rep.compute_s = static_cast<double>(rep.samples) / (1000.0 * (r + 1));
    w.line(w.good[r], proto::encode(proto::ReportMsg{"good", rep}));
  }
  live = good_job(w);
  check(live != nullptr && live->job->current().epoch == before.epoch + 1);
}

void check_views(const World& w) {
  if (const scheduler::LiveJob* live = good_job(w)) {
    check(live->owner == kOwner);
    const auto& j = *live->job;
    check(proto::plan_refusal(j.current(), j.current().epoch, j.world(), j.config()).empty());
  }
  scheduler::Stats st;
  check(!scheduler::render_status(w.jobs, st).empty());
  check(!scheduler::render_metrics(w.jobs, st).empty());
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  log::set_level(log::Level::error);  // the daemon's info lines would cost more than the run
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  World w;
  start_good(w);
  std::string_view in(reinterpret_cast<const char*>(data), size);
  int steps = 0;
  while (!in.empty() && steps++ < 64) {
    const std::size_t nl = in.find('\n');
    const std::string_view record = in.substr(0, nl);
    in.remove_prefix(nl == std::string_view::npos ? in.size() : nl + 1);
    if (record.empty()) continue;
    const auto b = static_cast<unsigned char>(record[0]);
    auto& s = w.conn[b % 4];
    switch ((b / 4) % 4) {
      case 0:
        if (!s || !s->open()) s = w.open();
        w.line(s, std::string(record.substr(1)));
        break;
      case 1:
        if (s) s->close();
        w.poll();
        break;
      case 2:  // the report timeout (1 us) has passed: its timer runs
        std::this_thread::sleep_for(std::chrono::microseconds(2));
        w.poll();
        break;
      default:
        good_epoch(w);
    }
    check_views(w);
  }
  good_epoch(w);
  check_views(w);
  return 0;
}
