#include "lib/planner/daemon.h"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "lib/common/error.h"
#include "lib/common/format.h"
#include "lib/common/hash.h"
#include "lib/common/log.h"
#include "lib/net/asio.h"
#include "lib/net/client.h"
#include "lib/net/token.h"
#include "lib/proto/checks.h"
#include "lib/proto/codec.h"
#include "lib/proto/messages.h"

namespace dbs::planner {
namespace {

using Clock = std::chrono::steady_clock;

// FNV-1a of the plan's encoding; never 0 (0 = no plan).
std::uint64_t fingerprint(const std::string& job, const policy::Plan& plan) {
  const std::string bytes = proto::encode(proto::PlanMsg{job, plan});
  const std::uint64_t h = fnv1a(bytes.data(), bytes.size());
  return h == 0 ? 1 : h;
}

class Daemon : public Planner {
 public:
  Daemon(const DaemonOptions& options, comm::Communicator& comm, const std::string& spec,
         const policy::PolicyConfig& config);
  ~Daemon() override;
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  const policy::Plan& plan() const override { return fallback_.plan(); }
  Planned next(std::span<const policy::Report> reports) override;
  std::optional<Planned> rebalance(std::span<const policy::Report> window) override {
    return fallback_.rebalance(window);
  }
  std::vector<double> state() const override { return fallback_.state(); }
  void set_state(const policy::Plan& plan, const std::vector<double>& state) override {
    fallback_.set_state(plan, state);
  }
  void finish() override;

 private:
  void on_connected();
  void on_line(std::string_view line);
  void on_lost(const std::string& why);
  // The daemon's valid plan of `epoch`, or nothing with `why` set. Blocks up to the timeout.
  std::optional<policy::Plan> wait_plan(std::int64_t epoch, std::string& why);
  bool all_agree(const std::optional<policy::Plan>& plan, std::string& why);

  DaemonOptions options_;
  comm::Communicator& comm_;
  proto::JobConfig job_config_;
  int world_, rank_;
  std::string register_line_;
  Embedded fallback_;  // its plan is the plan in force, the daemon's adopted when agreed
  net::asio::io_context io_;
  std::shared_ptr<net::LineClient> client_;
  std::thread thread_;

  std::mutex mutex_;  // guards what follows; the io thread writes, next() reads
  std::condition_variable changed_;
  bool connected_ = false, said_goodbye_ = false, ever_connected_ = false, finishing_ = false;
  int failures_ = 0;                  // failed attempts and lost connections so far
  std::string lost_why_, refusal_;    // last failure; last error message of the daemon
  std::optional<policy::Plan> plan_;  // latest plan received
  std::string report_line_;           // resent on every connect until its plan arrives
  bool fell_back_ = false;            // the last epoch did not get the daemon's plan
};

Daemon::Daemon(const DaemonOptions& options, comm::Communicator& comm, const std::string& spec,
               const policy::PolicyConfig& config)
    : options_(options),
      comm_(comm),
      job_config_(proto::job_config(spec, config)),
      world_(comm.size()),
      rank_(comm.rank()),
      fallback_(spec, config) {
  proto::RegisterMsg reg;
  reg.job = options_.job;
  reg.token = options_.token_file.empty() ? "" : net::read_token_file(options_.token_file);
  reg.rank = rank_;
  reg.world = world_;
  reg.host = comm.host();
  reg.config = job_config_;
  register_line_ = proto::encode(reg);
  net::ClientOptions co;
  co.server = net::parse_host_port(options_.address, "--scheduler");
  co.connect_timeout_s = options_.connect_timeout_s;
  co.backoff_max_s = 2;
  // A plan carries about 40 bytes per rank: room for very large jobs beyond the default limit.
  co.max_message =
      std::max<std::size_t>(proto::kMaxMessage, 64 * static_cast<std::size_t>(world_) + 65536);
  client_ = net::LineClient::create(
      io_, co,
      {[this] { on_connected(); }, [this](std::string_view l) { on_line(l); },
       [this](const std::string& why) { on_lost(why); }});
  client_->start();
  thread_ = std::thread([this] {
    auto guard = net::asio::make_work_guard(io_);
    io_.run();
  });
}

Daemon::~Daemon() {
  client_->stop();
  io_.stop();
  if (thread_.joinable()) thread_.join();
}

void Daemon::on_connected() {
  std::string report;
  {
    std::lock_guard lock(mutex_);
    connected_ = true;
    log::info(std::string(ever_connected_ ? "connected again" : "connected") +
              " to the daemon at " + options_.address);
    ever_connected_ = true;
    report = report_line_;
  }
  changed_.notify_all();
  client_->send(register_line_);
  if (!report.empty()) client_->send(report);
}

void Daemon::on_line(std::string_view line) {
  proto::Message m;
  try {
    m = proto::decode(line);
  } catch (const proto::ProtocolError& e) {
    log::warn(std::string("ignoring a bad message from the daemon: ") + e.what());
    return;
  }
  std::lock_guard lock(mutex_);
  if (const auto* p = std::get_if<proto::PlanMsg>(&m)) {
    if (p->job == options_.job && (!plan_ || p->plan.epoch >= plan_->epoch)) plan_ = p->plan;
  } else if (const auto* e = std::get_if<proto::ErrorMsg>(&m)) {
    if (refusal_ != e->message) log::warn("the daemon refused: " + e->message);
    refusal_ = e->message;
  } else if (std::holds_alternative<proto::GoodbyeMsg>(m)) {
    said_goodbye_ = true;
  }
  changed_.notify_all();
}

void Daemon::on_lost(const std::string& why) {
  {
    std::lock_guard lock(mutex_);
    if (connected_ && !finishing_) log::warn("lost the daemon at " + options_.address + ": " + why);
    connected_ = false;
    ++failures_;
    lost_why_ = why;
  }
  changed_.notify_all();
}

std::optional<policy::Plan> Daemon::wait_plan(std::int64_t epoch, std::string& why) {
  const auto start = Clock::now();
  const auto full = start + std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(options_.timeout_s));
  std::unique_lock lock(mutex_);
  // A daemon that was down (or never reached) gets one attempt, not the whole timeout.
  const bool down = !connected_ && (fell_back_ || !ever_connected_);
  const int failures_before = failures_;
  for (;;) {
    if (plan_ && plan_->epoch == epoch) {
      why = proto::plan_mismatch(*plan_, epoch, world_, job_config_);
      if (why.empty()) return plan_;
      why = "the daemon's plan is unusable: " + why;
      return std::nullopt;
    }
    const bool gave_up =
        !connected_ && ((down && failures_ > failures_before) || !refusal_.empty());
    if (gave_up || Clock::now() >= full) {
      if (!refusal_.empty()) {
        why = "the daemon refused: " + refusal_;
      } else if (connected_) {
        why = "no plan from the daemon within " + format_seconds(options_.timeout_s);
      } else {
        why = "daemon at " + options_.address + " unreachable (" +
              (lost_why_.empty() ? "no connection yet" : lost_why_) + ")";
      }
      return std::nullopt;
    }
    changed_.wait_until(lock, full);
  }
}

bool Daemon::all_agree(const std::optional<policy::Plan>& plan, std::string& why) {
  const std::uint64_t mine = plan ? fingerprint(options_.job, *plan) : 0;
  std::vector<std::uint64_t> all(static_cast<std::size_t>(world_));
  comm_.allgather_bytes(&mine, sizeof mine, all.data());
  std::string lacking;
  for (int r = 0; r < world_; ++r)
    if (all[static_cast<std::size_t>(r)] != all[0] || all[static_cast<std::size_t>(r)] == 0)
      lacking += (lacking.empty() ? "" : ", ") + std::to_string(r);
  if (lacking.empty()) return true;
  if (why.empty()) why = "ranks " + lacking + " lack the daemon's plan or hold another";
  return false;
}

Planned Daemon::next(std::span<const policy::Report> reports) {
  // The fallback observes every epoch, so it is as current as the daemon.
  const std::int64_t want = plan().epoch + 1;
  Planned embedded = fallback_.next(reports);
  std::string line;
  for (const auto& r : reports)
    if (r.rank == rank_) line = proto::encode(proto::ReportMsg{options_.job, r});
  {
    std::lock_guard lock(mutex_);
    report_line_ = line;
    refusal_.clear();
  }
  client_->send(line);       // dropped if not connected; on_connected resends it
  client_->reconnect_now();  // no backoff wait at an epoch's end
  std::string why;
  const std::optional<policy::Plan> plan = wait_plan(want, why);
  const bool agreed = all_agree(plan, why);
  {
    std::lock_guard lock(mutex_);
    report_line_.clear();
  }
  if (agreed) {
    if (fell_back_)
      log::info("epoch " + std::to_string(want + 1) + ": planned by the daemon again");
    fell_back_ = false;
    fallback_.adopt(*plan);
    return {*plan, "daemon"};
  }
  log::warn("epoch " + std::to_string(want + 1) + " uses the embedded policy: " + why);
  fell_back_ = true;
  embedded.source = "embedded-fallback";
  return embedded;
}

void Daemon::finish() {
  std::unique_lock lock(mutex_);
  finishing_ = true;
  client_->send(proto::encode(proto::GoodbyeMsg{true}));
  changed_.wait_for(lock, std::chrono::seconds(1), [this] { return said_goodbye_ || !connected_; });
}

}  // namespace

std::unique_ptr<Planner> make_daemon(const DaemonOptions& options, comm::Communicator& comm,
                                     const std::string& spec, const policy::PolicyConfig& config) {
  return std::make_unique<Daemon>(options, comm, spec, config);
}

}  // namespace dbs::planner
