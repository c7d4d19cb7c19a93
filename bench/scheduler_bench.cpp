// dbs-bench scheduler: a load generator for dbs-scheduler serve on loopback. Starts the daemon
// in this process (its own io thread, plus the journal writer with --state-dir), connects
// --agents agents in jobs of --world ranks, and runs every job for --reports epochs as fast as
// the round trips allow: each agent reports, waits for the plan of the next epoch, reports
// again (a closed loop, like real agents with epochs of --epoch-ms, default 0). With epochs,
// job j starts j/jobs of an epoch late, so that jobs are not in step (as on a real cluster).
// Latency is from sending a report to receiving the plan made from it, so it includes waiting
// for the job's other ranks.
// Then it times the plan of one job of --plan-ranks ranks (the daemon's Job code, no sockets).
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "bench/bench.h"
#include "lib/common/error.h"
#include "lib/common/log.h"
#include "lib/common/stats.h"
#include "lib/common/timer.h"
#include "lib/net/asio.h"
#include "lib/net/fd_limit.h"
#include "lib/proto/codec.h"
#include "lib/proto/protocol.h"
#include "scheduler/serve/daemon.h"
#include "scheduler/serve/job.h"

namespace dbs::bench {
namespace {

using net::tcp;
using net::asio::io_context;
using Clock = std::chrono::steady_clock;

struct LoadOptions {
  int agents = 256;          // connections, one per rank
  int reports = 200;         // reports per agent (epochs per job)
  int world = 16;            // ranks per job
  double epoch_ms = 0;       // an epoch's compute: from a plan to the next report (0 = at once)
  std::string state_dir;     // journal here (synced per epoch); empty = daemon in memory
  int plan_ranks = 10000;    // ranks of the job whose planning is timed
  double max_seconds = 120;  // give up after this long
};

// Deterministic, unequal speeds so that the dbs policy has something to balance.
double speed_of(int rank) {
  return 1000.0 * (1 + rank % 4);
}

Report report_of(int rank, std::int64_t epoch, int batch) {
  Report r;
  r.rank = rank;
  r.epoch = epoch;
  r.batch = batch;
  r.steps = 20;
  r.samples = 20L * batch;
  r.compute_s = static_cast<double>(r.samples) / speed_of(rank);
  r.comm_s = 0.01;
  return r;
}

Settings config_of(int world) {
  Settings c;
  c.global_batch = 32 * world;
  c.samples_per_epoch = 640L * world;
  return c;
}

class Load {
 public:
  Load(io_context& io, tcp::endpoint daemon, const LoadOptions& o)
      : io_(io), daemon_(daemon), o_(o) {
    for (int a = 0; a < o.agents; ++a)
      agents_.push_back(
          std::make_unique<Agent>(io, "bench-" + std::to_string(a / o.world), a % o.world,
                                  std::min(o.world, o.agents - a / o.world * o.world)));
    latencies_.reserve(static_cast<std::size_t>(o.agents) * static_cast<std::size_t>(o.reports));
  }

  void start() {
    for (auto& a : agents_) {
      a->socket.async_connect(daemon_, [this, ag = a.get()](const net::error_code& ec) {
        if (ec) return fail("connect: " + ec.message());
        ag->socket.set_option(tcp::no_delay(true));
        proto::RegisterMsg r{ag->job, "", ag->rank, ag->world, "bench", config_of(ag->world),
                             "",      ""};
        write(*ag, proto::encode(r));
        read(*ag);
      });
    }
  }

  std::vector<double>& latencies() { return latencies_; }
  double connect_s() const { return std::chrono::duration<double>(load_start_ - created_).count(); }
  double load_s() const { return std::chrono::duration<double>(end_ - load_start_).count(); }
  const std::string& error() const { return error_; }

 private:
  struct Agent {
    Agent(io_context& io, std::string j, int r, int w)
        : socket(io), timer(io), job(std::move(j)), rank(r), world(w) {}
    tcp::socket socket;
    net::asio::steady_timer timer;  // the epoch's compute
    proto::LineReader reader;
    std::array<char, 4096> buffer{};
    std::string out;
    std::string job;
    int rank, world;
    bool registered = false;
    std::int64_t epoch = 0;  // next epoch to report (0-based)
    int batch = 0;
    Clock::time_point sent_at;
  };

  void fail(const std::string& why) {
    if (error_.empty()) error_ = why;
    io_.stop();
  }

  void write(Agent& a, std::string line) {
    a.out = std::move(line);  // at most one message in flight per agent
    net::asio::async_write(a.socket, net::asio::buffer(a.out),
                           [this](const net::error_code& ec, std::size_t) {
                             if (ec) fail("write: " + ec.message());
                           });
  }

  void read(Agent& a) {
    a.socket.async_read_some(
        net::asio::buffer(a.buffer), [this, &a](const net::error_code& ec, std::size_t n) {
          if (ec) return fail("read: " + ec.message());
          a.reader.feed(std::string_view(a.buffer.data(), n), [&](std::string_view line) {
            on_line(a, line);
            return true;
          });
          if (error_.empty()) read(a);
        });
  }

  // The ranks of a job receive one plan message each, alike up to the rank's own fields at the
  // end (proto::PlanLines): the first of a plan is decoded in full, the others, when they begin
  // with the same bytes, only for their rank and batch (the load generator's own cost is not
  // what is measured). nullptr: not a plan.
  const proto::PlanMsg* plan_of(Agent& a, std::string_view line) {
    Seen& seen = seen_[a.job];
    const std::size_t own = line.rfind(",\"rank\":");
    if (own != std::string_view::npos && line.substr(0, own) == seen.head &&
        own_fields(line.substr(own), seen.plan))
      return &seen.plan;
    const proto::Message m = proto::decode(line);
    const auto* plan = std::get_if<proto::PlanMsg>(&m);
    if (plan == nullptr) return nullptr;
    seen.plan = *plan;
    seen.head = own == std::string_view::npos ? "" : line.substr(0, own);
    return &seen.plan;
  }

  // Reads `,"rank":R,"batch":B` at the start of a plan message's own fields into `plan`.
  static bool own_fields(std::string_view s, proto::PlanMsg& plan) {
    const auto number = [&s](std::string_view key, int& out) {
      if (!s.starts_with(key)) return false;
      const char* end = s.data() + s.size();
      const auto [at, ec] = std::from_chars(s.data() + key.size(), end, out);
      s.remove_prefix(static_cast<std::size_t>(at - s.data()));
      return ec == std::errc();
    };
    return number(",\"rank\":", plan.rank) && number(",\"batch\":", plan.batch);
  }

  void on_line(Agent& a, std::string_view line) {
    const proto::PlanMsg* plan = nullptr;
    try {
      plan = plan_of(a, line);
    } catch (const Error& e) {
      return fail(e.what());
    }
    if (plan == nullptr || plan->rank != a.rank)
      return fail("daemon answered: " + std::string(line));
    a.batch = plan->batch;
    if (!a.registered) {
      a.registered = true;
      if (++registered_ == o_.agents) {
        load_start_ = Clock::now();
        const int jobs = (o_.agents + o_.world - 1) / o_.world;
        for (std::size_t i = 0; i < agents_.size(); ++i)
          compute(*agents_[i],
                  o_.epoch_ms * static_cast<double>(static_cast<int>(i) / o_.world) / jobs);
      }
      return;
    }
    if (plan->epoch != a.epoch + 1) return;  // a resend; not ours
    latencies_.push_back(
        std::chrono::duration<double, std::milli>(Clock::now() - a.sent_at).count());
    if (++a.epoch < o_.reports) return compute(a, o_.epoch_ms);
    if (++finished_ == o_.agents) {
      end_ = Clock::now();
      io_.stop();
    }
  }

  // Reports after `ms` of "training".
  void compute(Agent& a, double ms) {
    if (ms <= 0) return report(a);
    a.timer.expires_after(
        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(ms)));
    a.timer.async_wait([this, &a](const net::error_code& ec) {
      if (!ec) report(a);
    });
  }

  void report(Agent& a) {
    a.sent_at = Clock::now();
    write(a, proto::encode(proto::ReportMsg{a.job, report_of(a.rank, a.epoch, a.batch)}));
  }

  io_context& io_;
  tcp::endpoint daemon_;
  LoadOptions o_;
  struct Seen {
    std::string head;     // the last plan line decoded in full, up to its rank's own fields
    proto::PlanMsg plan;  // what it decoded to, with the rank and batch of the last line read
  };
  std::vector<std::unique_ptr<Agent>> agents_;
  std::unordered_map<std::string, Seen> seen_;  // by job
  std::vector<double> latencies_;
  int registered_ = 0, finished_ = 0;
  Clock::time_point created_ = Clock::now(), load_start_, end_;
  std::string error_;
};

struct PlanTiming {
  double plan_ms = 0, encode_ms = 0;  // medians
  double plan_cpu_ms = 0;             // median CPU time of the planning thread
  double plan_allocations = 0;        // median allocations of one plan (policy + bookkeeping)
  std::size_t bytes = 0;              // the longest plan message (one rank's share)
};

// Over `rounds` epochs of one job of `ranks` ranks: planning (policy + bookkeeping) and encoding
// the plan messages (the plan's hash and every rank's share).
PlanTiming time_plan(int ranks, int rounds) {
  scheduler::Job job("plan", ranks, config_of(ranks));
  std::vector<double> plan_ms, encode_ms, plan_cpu_ms, plan_allocations;
  std::size_t bytes = 0;
  for (int e = 0; e < rounds; ++e) {
    for (int r = 0; r < ranks; ++r) {
      Report rep = report_of(r, e, job.current().batch[static_cast<std::size_t>(r)]);
      rep.compute_s *= 1.0 + 0.01 * ((r * 7 + e * 3) % 5);  // noise, so plans keep changing
      job.add(rep);
    }
    const double cpu0 = cpu_seconds();
    const std::uint64_t allocs0 = thread_allocations();
    Stopwatch sw;
    const scheduler::EpochOutcome o = job.plan(30);
    job.commit(o);
    plan_ms.push_back(1000 * sw.seconds());
    plan_cpu_ms.push_back(1000 * (cpu_seconds() - cpu0));
    plan_allocations.push_back(static_cast<double>(thread_allocations() - allocs0));
    sw.reset();
    const proto::PlanLines lines("plan", o.plan);
    for (int r = 0; r < ranks; ++r) bytes = std::max(bytes, lines.line(r).size());
    encode_ms.push_back(1000 * sw.seconds());
  }
  return {stats::median(plan_ms), stats::median(encode_ms), stats::median(plan_cpu_ms),
          stats::median(plan_allocations), bytes};
}

int run(const LoadOptions& o) {
  if (o.agents < 1 || o.reports < 1 || o.world < 1)
    throw ConfigError("--agents, --reports and --world must be >= 1");
  log::set_level(log::Level::warn);
  const std::size_t fds = net::raise_fd_limit(2 * static_cast<std::size_t>(o.agents) + 512);
  if (fds < 2 * static_cast<std::size_t>(o.agents) + 64)
    throw ConfigError("open-file limit " + std::to_string(fds) + " too low for " +
                      std::to_string(o.agents) + " agents");
  scheduler::ServeOptions so;
  so.listen = "127.0.0.1:0";
  so.state_dir = o.state_dir;
  so.handle_signals = false;
  so.max_connections = static_cast<std::size_t>(o.agents) + 16;
  so.max_jobs = static_cast<std::size_t>(o.agents);
  scheduler::Daemon daemon(so);
  double daemon_cpu_s = 0;
  std::uint64_t daemon_allocations = 0;
  std::thread server([&] {
    daemon.run();
    daemon_cpu_s = cpu_seconds();
    daemon_allocations = thread_allocations();
  });

  io_context io(1);
  Load load(io, daemon.agent_endpoint(), o);
  load.start();
  net::asio::steady_timer deadline(io);
  deadline.expires_after(
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.max_seconds)));
  bool late = false;
  deadline.async_wait([&](const net::error_code& ec) {
    if (ec) return;
    late = true;
    io.stop();
  });
  io.run();
  const double client_cpu_s = cpu_seconds();
  daemon.stop();
  server.join();
  if (late) throw CommError("load did not finish within " + std::to_string(o.max_seconds) + " s");
  if (!load.error().empty()) throw CommError(load.error());

  auto& lat = load.latencies();
  const double total = static_cast<double>(lat.size());
  const PlanTiming plan = time_plan(o.plan_ranks, 5);
  nlohmann::json out = {
      {"protocol_version", proto::kVersion},
      {"agents", o.agents},
      {"world", o.world},
      {"epoch_ms", o.epoch_ms},
      {"jobs", (o.agents + o.world - 1) / o.world},
      {"reports", lat.size()},
      {"journal", !o.state_dir.empty()},
      {"connect_s", load.connect_s()},
      {"seconds", load.load_s()},
      {"reports_per_s", total / load.load_s()},
      {"p50_ms", stats::quantile(lat, 0.50)},
      {"p90_ms", stats::quantile(lat, 0.90)},
      {"p99_ms", stats::quantile(lat, 0.99)},
      {"max_ms", stats::quantile(lat, 1.0)},
      {"daemon_cpu_us_per_report", 1e6 * daemon_cpu_s / total},
      {"client_cpu_us_per_report", 1e6 * client_cpu_s / total},
      {"daemon_allocations_per_report", static_cast<double>(daemon_allocations) / total},
      {"plan_ranks", o.plan_ranks},
      {"plan_ms", plan.plan_ms},
      {"plan_cpu_ms", plan.plan_cpu_ms},
      {"plan_allocations", plan.plan_allocations},
      {"plan_encode_ms", plan.encode_ms},
      {"plan_message_bytes", plan.bytes}};
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}

}  // namespace

void add_scheduler_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<LoadOptions>();
  auto* cmd = cli::add_command(
      app, action, "scheduler",
      "load on dbs-scheduler serve (in-process, loopback): reports/s, latency, plan time", o, run);
  cmd->add_option("--agents", o->agents, "agents (connections, one per rank)")
      ->capture_default_str();
  cmd->add_option("--reports", o->reports, "reports per agent (epochs per job)")
      ->capture_default_str();
  cmd->add_option("--world", o->world, "ranks per job")->capture_default_str();
  cmd->add_option("--epoch-ms", o->epoch_ms,
                  "each agent's epoch: from a plan to its next report (0 = at once)")
      ->capture_default_str();
  cmd->add_option("--state-dir", o->state_dir,
                  "journal into this directory (synced per epoch); default: in memory");
  cmd->add_option("--plan-ranks", o->plan_ranks, "ranks of the job whose planning is timed")
      ->capture_default_str();
  cmd->add_option("--max-seconds", o->max_seconds, "give up after this long")
      ->capture_default_str();
}

}  // namespace dbs::bench
