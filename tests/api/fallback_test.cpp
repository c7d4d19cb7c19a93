// dbs::last_fallback: why the remote planner did not use the daemon's plan, the same cause on
// every rank. A fake daemon on loopback (a plain socket per connection, one thread each)
// answers reports with a plan of another job and counts them; an address nothing listens on is
// an outage. And Planner::send_ahead: the report reaches the daemon before next(), once; and
// the shares carried in the caller's gather of the reports (SharesAhead).
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <atomic>
#include <chrono>
#include <dbs/meter.h>
#include <dbs/planner.h>
#include <memory>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "lib/comm/group.h"
#include "lib/comm/local.h"
#include "lib/planner/remote.h"
#include "lib/proto/codec.h"
#include "lib/proto/messages.h"

namespace {

// Answers each report of the ranks in `foreign_to` with rank r's share of a plan for job
// "other", and nothing else; the ranks not listed get no plan.
class ForeignDaemon {
 public:
  explicit ForeignDaemon(std::vector<int> foreign_to) : foreign_to_(std::move(foreign_to)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t n = sizeof a;
    REQUIRE(::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &n) == 0);
    REQUIRE(::listen(listener_, 8) == 0);
    address_ = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
    accept_ = std::thread([this] { serve(); });
  }
  ~ForeignDaemon() {
    stopping_ = true;
    ::shutdown(listener_, SHUT_RDWR);
    ::close(listener_);
    accept_.join();
    for (auto& c : connections_) {
      ::shutdown(c.first, SHUT_RDWR);
      c.second.join();
      ::close(c.first);
    }
  }
  const std::string& address() const { return address_; }
  int reports() const { return reports_; }

 private:
  void serve() {
    while (!stopping_) {
      const int fd = ::accept(listener_, nullptr, nullptr);
      if (fd < 0) return;
      connections_.emplace_back(fd, std::thread([this, fd] { answer(fd); }));
    }
  }
  void answer(int fd) {
    std::string buffer;
    char chunk[4096];
    for (ssize_t got; (got = ::read(fd, chunk, sizeof chunk)) > 0;) {
      buffer.append(chunk, static_cast<std::size_t>(got));
      for (std::size_t end; (end = buffer.find('\n')) != std::string::npos;) {
        const std::string line = buffer.substr(0, end);
        buffer.erase(0, end + 1);
        const dbs::proto::Message m = dbs::proto::decode(line);
        const auto* r = std::get_if<dbs::proto::ReportMsg>(&m);
        if (r) ++reports_;
        if (!r || std::find(foreign_to_.begin(), foreign_to_.end(), r->report.rank) ==
                      foreign_to_.end())
          continue;
        dbs::proto::PlanMsg plan;
        plan.job = "other";
        plan.epoch = r->report.epoch + 1;
        plan.rank = r->report.rank;
        plan.world = 2;
        plan.global_batch = 128;
        plan.batch = plan.rank == 0 ? 100 : 28;
        plan.offset = plan.rank == 0 ? 0 : 100;
        plan.reason = "not yours";
        plan.hash = 1;
        const std::string out = dbs::proto::encode(plan) + "\n";
        if (::write(fd, out.data(), out.size()) < 0) return;
      }
    }
  }

  std::vector<int> foreign_to_;
  int listener_ = -1;
  std::string address_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> reports_{0};  // reports received, from every rank
  std::thread accept_;
  std::vector<std::pair<int, std::thread>> connections_;  // touched by the accept thread only
};

// The planner of job "mine" on one of the in-process ranks of g, planned by the daemon at
// address, and that rank's report of an epoch of 8 steps of 64 samples under it.
std::unique_ptr<dbs::Planner> planner_of(const dbs::Group& g, const std::string& address,
                                         double timeout_s) {
  dbs::Remote remote;
  remote.address = address;
  remote.job = "mine";
  remote.timeout_s = timeout_s;
  dbs::Settings s;
  s.samples_per_epoch = 1024;
  return dbs::make_planner(s, g, remote);
}
dbs::Report report_of(const dbs::Planner& planner, int rank) {
  dbs::Meter m;
  for (int i = 0; i < 8; ++i) m.step(64, 0.064);
  return m.report(planner.plan(), rank);
}

// One epoch end of job "mine" on 2 in-process ranks planned by the daemon at address: each
// rank's source and Fallback.
std::vector<std::pair<std::string, dbs::Fallback>> epoch_end(const std::string& address) {
  std::vector<std::pair<std::string, dbs::Fallback>> out(2);
  dbs::comm::LocalGroup::run(2, [&](dbs::comm::Communicator& comm) {
    const dbs::Group g = dbs::comm::group_of(comm);
    auto planner = planner_of(g, address, 1);
    CHECK(dbs::last_fallback(*planner).cause == dbs::Fallback::Cause::none);
    const dbs::Planned p = planner->next(dbs::gather_reports(g, report_of(*planner, g.rank)));
    CHECK(p.plan.batch != std::vector<int>{100, 28});
    out[static_cast<std::size_t>(comm.rank())] = {p.source, dbs::last_fallback(*planner)};
    planner->finish(true);
  });
  return out;
}

}  // namespace

TEST_CASE("Api.LastFallback.ForeignPlanOnOneRankIsForeignOnEveryRank") {
  ForeignDaemon daemon({1});  // rank 0 gets no plan at all
  const auto got = epoch_end(daemon.address());
  const std::string why = "rank 1 received a plan for job 'other' from the daemon at " +
                          daemon.address() + ", this is job 'mine'";
  for (const auto& [source, fallback] : got) {
    CHECK(source == "embedded-fallback");
    CHECK(fallback.cause == dbs::Fallback::Cause::foreign);
    CHECK(fallback.why == why);
  }
}

TEST_CASE("Api.LastFallback.UnreachableDaemonIsAnOutage") {
  const auto got = epoch_end("127.0.0.1:1");  // nothing listens there: refused at once
  for (const auto& [source, fallback] : got) {
    CHECK(source == "embedded-fallback");
    CHECK(fallback.cause == dbs::Fallback::Cause::outage);
    CHECK(fallback.why.find("unreachable") != std::string::npos);
  }
}

TEST_CASE("Api.SendAhead.TheDaemonHasTheReportBeforeTheRanksGatherAndNextDoesNotResendIt") {
  ForeignDaemon daemon({});  // answers no report: each epoch end falls back after the timeout
  std::atomic<int> ahead{0};
  dbs::comm::LocalGroup::run(2, [&](dbs::comm::Communicator& comm) {
    const dbs::Group g = dbs::comm::group_of(comm);
    auto planner = planner_of(g, daemon.address(), 0.5);
    const dbs::Report mine = report_of(*planner, g.rank);
    planner->send_ahead(mine);
    // Both ranks' reports reach the daemon before either rank gathers or plans. Under auth
    // auto a register can wait about 2 s on munge, whose connect tries again where munged's
    // socket is there but nothing listens on it, so the wait is 10 s.
    for (int i = 0; i < 2000 && daemon.reports() < 2; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (comm.rank() == 0) ahead = daemon.reports();
    const dbs::Planned p = planner->next(dbs::gather_reports(g, mine));
    CHECK(p.source == "embedded-fallback");
    planner->finish(true);
  });
  CHECK(ahead == 2);
  CHECK(daemon.reports() == 2);  // next() sent neither report again
}

// The shares carried in the caller's gather: the same verdict on every rank as next()'s own
// allgather gives, with each report sent once.
TEST_CASE("Planner.SharesAhead.ForeignPlanOnOneRankInTheCallersGatherIsForeignOnEveryRank") {
  ForeignDaemon daemon({1});  // rank 0 gets no plan: its share_ahead waits the timeout
  std::vector<dbs::Fallback> got(2);
  std::vector<std::string> sources(2);
  dbs::comm::LocalGroup::run(2, [&](dbs::comm::Communicator& comm) {
    const dbs::Group g = dbs::comm::group_of(comm);
    auto planner = planner_of(g, daemon.address(), 0.5);
    auto* ahead = dynamic_cast<dbs::planner::SharesAhead*>(planner.get());
    REQUIRE(ahead != nullptr);
    const dbs::Report mine = report_of(*planner, g.rank);
    std::array<std::byte, dbs::planner::kShareBytes> share{};
    ahead->share_ahead(mine, share);
    std::vector<std::byte> all(2 * share.size());
    comm.allgather_bytes(share.data(), share.size(), all.data());
    const std::vector<dbs::Report> reports = dbs::gather_reports(g, mine);
    CHECK_THROWS_AS(ahead->next_gathered(reports, std::span(all).first(share.size())),
                    dbs::InputError);
    const dbs::Planned p = ahead->next_gathered(reports, all);
    CHECK(p.plan.batch != std::vector<int>{100, 28});
    const auto r = static_cast<std::size_t>(comm.rank());
    sources[r] = p.source;
    got[r] = dbs::last_fallback(*planner);
    planner->finish(true);
  });
  const std::string why = "rank 1 received a plan for job 'other' from the daemon at " +
                          daemon.address() + ", this is job 'mine'";
  for (int r = 0; r < 2; ++r) {
    CHECK(sources[static_cast<std::size_t>(r)] == "embedded-fallback");
    CHECK(got[static_cast<std::size_t>(r)].cause == dbs::Fallback::Cause::foreign);
    CHECK(got[static_cast<std::size_t>(r)].why == why);
  }
  CHECK(daemon.reports() == 2);
}

TEST_CASE("Api.LastFallback.EmbeddedPlannerNeverFallsBack") {
  dbs::Settings s;
  auto planner = dbs::make_planner(s, dbs::Group{});
  dbs::Meter m;
  m.step(128, 0.1);
  planner->next(std::vector<dbs::Report>{m.report(planner->plan(), 0)});
  CHECK(dbs::last_fallback(*planner).cause == dbs::Fallback::Cause::none);
  CHECK(dbs::last_fallback(*planner).why.empty());
}
