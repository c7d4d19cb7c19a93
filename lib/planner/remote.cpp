#include "lib/planner/remote.h"

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <vector>

#include "lib/auth/credential.h"
#include "lib/common/error.h"
#include "lib/common/format.h"
#include "lib/common/log.h"
#include "lib/net/asio.h"
#include "lib/net/client.h"
#include "lib/net/token.h"
#include "lib/proto/checks.h"
#include "lib/proto/codec.h"
#include "lib/proto/messages.h"
#include "lib/proto/share.h"

namespace dbs::planner {
namespace {

std::string host_name() {
  char name[256] = {};
  return gethostname(name, sizeof name - 1) == 0 ? std::string(name) : std::string("unknown");
}

using Clock = std::chrono::steady_clock;

// What each rank gives the epoch end's allgather (or the caller's gather: SharesAhead): its
// share of the daemon's plan, or whether it received a plan of another job instead, and that job
// (its first 63 bytes).
struct Word {
  proto::Share share;
  std::uint8_t foreign = 0;  // 1: a plan of another job
  char foreign_job[63] = {};
};
static_assert(std::is_trivially_copyable_v<Word>);
static_assert(sizeof(Word) == kShareBytes);

class RemotePlanner : public Planner, public WithFallback, public SharesAhead {
 public:
  RemotePlanner(const Remote& remote, const Settings& settings, const Group& group);
  ~RemotePlanner() override;
  RemotePlanner(const RemotePlanner&) = delete;
  RemotePlanner& operator=(const RemotePlanner&) = delete;

  const Plan& plan() const override { return fallback_.plan(); }
  Planned next(std::span<const Report> reports) override;
  std::optional<Planned> rebalance(std::span<const Report> window) override {
    return fallback_.rebalance(window);
  }
  std::vector<double> state() const override { return fallback_.state(); }
  void set_state(const Plan& plan, const std::vector<double>& state) override {
    fallback_.set_state(plan, state);
  }
  void finish(bool done) override;
  void send_ahead(const Report& mine) override;
  void share_ahead(const Report& mine, std::span<std::byte, kShareBytes> out) override;
  Planned next_gathered(std::span<const Report> reports, std::span<const std::byte> all) override;
  const Fallback& fallback() const override { return fallback_why_; }
  double waited_s() const override { return waited_s_; }

 private:
  // Sends this rank's report of the epoch ending (resent on every connect until its plan
  // arrives), unless it was sent already.
  void submit(const Report& mine);
  void on_connected();
  // The register to send on this connect: with a fresh munge credential when the ranks use
  // munge (a credential opens one register only).
  std::string register_line();
  void on_line(std::string_view line);
  void on_lost(const std::string& why);
  // This rank's share of the daemon's plan of `epoch`, or nothing with `why` set. Blocks up to
  // the timeout.
  std::optional<proto::PlanMsg> wait_plan(std::int64_t epoch, std::string& why);
  // What this rank gives the other ranks of `mine`, its share (or the plan of another job it
  // received instead).
  Word word_of(const std::optional<proto::PlanMsg>& mine);
  // The plan every rank holds a share of, or nothing with fallback_why_ set (the same verdict
  // and cause on every rank: they follow from every rank's word, `all`, alone).
  std::optional<Plan> agree(const std::optional<proto::PlanMsg>& mine, std::span<const Word> all,
                            std::int64_t epoch, const std::string& why);
  // The epoch end's plan: the daemon's when the ranks agree on it, else the fallback's from
  // the epoch's reports.
  Planned conclude(std::span<const Report> reports, const std::optional<proto::PlanMsg>& mine,
                   std::span<const Word> all, std::int64_t epoch, const std::string& why);

  Remote remote_;
  Allgather allgather_;
  Settings settings_;
  int world_, rank_;
  proto::RegisterMsg register_;
  bool munge_ = false;         // a munge credential with every register
  bool munge_warned_ = false;  // said once that munged could not encode (auto)
  Embedded fallback_;          // its plan is the plan in force, the daemon's adopted when agreed
  net::asio::io_context io_;
  std::shared_ptr<net::LineClient> client_;
  std::thread thread_;

  std::mutex mutex_;  // guards what follows; the io thread writes, next() reads
  std::condition_variable changed_;
  bool connected_ = false, said_goodbye_ = false, ever_connected_ = false, finishing_ = false;
  int failures_ = 0;                    // failed attempts and lost connections so far
  std::string lost_why_, refusal_;      // last failure; last error message of the daemon
  std::optional<std::string> foreign_;  // the job of the last plan received for another job
  std::optional<proto::PlanMsg> plan_;  // latest share of a plan received
  std::string report_line_;   // sent (ahead of next() or by it), resent on every connect until
                              // its plan arrives; cleared at the end of next()
  int failures_at_send_ = 0;  // failures_ when report_line_ was sent
  bool fell_back_ = false;    // the last epoch did not get the daemon's plan
  Fallback fallback_why_;     // why, after the last epoch end; conclude() alone writes it
  double waited_s_ = 0;       // the last epoch end's wait for the daemon's plan
  // share_ahead's share of the epoch ending (nothing: none came) and why none came.
  std::optional<proto::PlanMsg> ahead_;
  std::string ahead_why_;
};

RemotePlanner::RemotePlanner(const Remote& remote, const Settings& settings, const Group& group)
    : remote_(remote),
      allgather_(group.allgather),
      settings_(settings),
      world_(group.size),
      rank_(group.rank),
      fallback_(settings, world_) {
  // make_planner checked remote_ (check_remote) on every rank before.
  const Remote::Auth mode = remote_.auth;
  munge_ = mode == Remote::Auth::munge ||
           (mode == Remote::Auth::automatic && remote_.token_file.empty() && auth::munge_built());
  proto::RegisterMsg& reg = register_;
  reg.job = remote_.job;
  reg.token = remote_.token_file.empty() || mode == Remote::Auth::munge
                  ? ""
                  : net::read_token_file(remote_.token_file);
  reg.rank = rank_;
  reg.world = world_;
  reg.host = group.host.empty() ? host_name() : group.host;
  reg.config = settings_;
  reg.waiting = group.waiting;
  net::ClientOptions co;
  co.server = net::parse_host_port(remote_.address, "address");
  co.connect_timeout_s = remote_.connect_timeout_s;
  co.backoff_max_s = 2;
  co.tls_ca = remote_.tls_ca;
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

RemotePlanner::~RemotePlanner() {
  client_->stop();
  io_.stop();
  if (thread_.joinable()) thread_.join();
}

void RemotePlanner::on_connected() {
  std::string report;
  {
    std::lock_guard lock(mutex_);
    connected_ = true;
    log::info(std::string(ever_connected_ ? "connected again" : "connected") +
              " to the daemon at " + remote_.address);
    ever_connected_ = true;
    report = report_line_;
  }
  changed_.notify_all();
  client_->send(register_line());
  if (!report.empty()) client_->send(report);
}

std::string RemotePlanner::register_line() {
  if (!munge_) return proto::encode(register_);
  proto::RegisterMsg reg = register_;
  try {
    reg.auth = proto::kMungeScheme +
               auth::munge_encode(remote_.munge_socket, proto::munge_payload(reg.job, reg.rank));
  } catch (const Error& e) {
    const bool required = remote_.auth == Remote::Auth::munge;
    if (required || !munge_warned_)
      (required ? log::warn
                : log::info)(std::string(e.what()) + "; registering without a credential");
    munge_warned_ = true;
  }
  return proto::encode(reg);
}

void RemotePlanner::on_line(std::string_view line) {
  proto::Message m;
  try {
    m = proto::decode(line);
  } catch (const proto::ProtocolError& e) {
    log::warn(std::string("ignoring a bad message from the daemon: ") + e.what());
    return;
  }
  std::lock_guard lock(mutex_);
  if (const auto* p = std::get_if<proto::PlanMsg>(&m)) {
    if (p->job != remote_.job) {
      foreign_ = p->job;
    } else if (p->rank == rank_ && (!plan_ || p->epoch >= plan_->epoch)) {
      plan_ = *p;
    }
  } else if (const auto* e = std::get_if<proto::ErrorMsg>(&m)) {
    if (refusal_ != e->message) log::warn("the daemon refused: " + e->message);
    refusal_ = e->message;
  } else if (std::holds_alternative<proto::GoodbyeMsg>(m)) {
    said_goodbye_ = true;
  }
  changed_.notify_all();
}

void RemotePlanner::on_lost(const std::string& why) {
  {
    std::lock_guard lock(mutex_);
    if (connected_ && !finishing_) log::warn("lost the daemon at " + remote_.address + ": " + why);
    connected_ = false;
    ++failures_;
    lost_why_ = why;
  }
  changed_.notify_all();
}

std::optional<proto::PlanMsg> RemotePlanner::wait_plan(std::int64_t epoch, std::string& why) {
  const auto start = Clock::now();
  const auto full = start + std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(remote_.timeout_s));
  std::unique_lock lock(mutex_);
  // A daemon that was down (or never reached) gets one attempt, not the whole timeout: the
  // one made when the report was sent.
  const bool down = !connected_ && (fell_back_ || !ever_connected_);
  const int failures_before = failures_at_send_;
  for (;;) {
    if (plan_ && plan_->epoch == epoch) return plan_;
    if (foreign_) return std::nullopt;  // agree() names the job, for every rank
    const bool gave_up =
        !connected_ && ((down && failures_ > failures_before) || !refusal_.empty());
    if (gave_up || Clock::now() >= full) {
      if (!refusal_.empty()) {
        why = "the daemon refused: " + refusal_;
      } else if (connected_) {
        why = "no plan from the daemon within " + format_seconds(remote_.timeout_s);
      } else {
        why = "daemon at " + remote_.address + " unreachable (" +
              (lost_why_.empty() ? "no connection yet" : lost_why_) + ")";
      }
      return std::nullopt;
    }
    changed_.wait_until(lock, full);
  }
}

Word RemotePlanner::word_of(const std::optional<proto::PlanMsg>& mine) {
  Word word;
  if (mine) {  // a rank that holds its share of this job's plan ignores stray ones
    word.share = proto::share_of(*mine);
  } else {
    std::lock_guard lock(mutex_);
    if (foreign_) {
      word.foreign = 1;
      std::strncpy(word.foreign_job, foreign_->c_str(), sizeof word.foreign_job - 1);
    }
  }
  return word;
}

std::optional<Plan> RemotePlanner::agree(const std::optional<proto::PlanMsg>& mine,
                                         std::span<const Word> all, std::int64_t epoch,
                                         const std::string& why) {
  // A plan of another job on any rank: the address is not this job's daemon, or the daemon is
  // faulty. Every rank names the first such rank, from the same words.
  for (int r = 0; r < world_; ++r) {
    const Word& w = all[static_cast<std::size_t>(r)];
    if (w.foreign == 0) continue;
    const char* other = w.foreign_job;
    fallback_why_ = {Fallback::Cause::foreign,
                     "rank " + std::to_string(r) + " received a plan for job '" +
                         std::string(other, strnlen(other, sizeof w.foreign_job)) +
                         "' from the daemon at " + remote_.address + ", this is job '" +
                         remote_.job + "'"};
    return std::nullopt;
  }
  std::vector<proto::Share> shares;
  for (const Word& w : all) shares.push_back(w.share);
  std::string disagree;
  std::optional<Plan> plan = proto::assemble(mine.value_or(proto::PlanMsg{}), shares, disagree);
  if (plan) disagree = proto::plan_mismatch(*plan, epoch, world_, settings_);
  if (disagree.empty()) return plan;
  fallback_why_ = {Fallback::Cause::outage, !why.empty() ? why
                                            : plan ? "the daemon's plan is unusable: " + disagree
                                                   : disagree};
  return std::nullopt;
}

void RemotePlanner::submit(const Report& mine) {
  const std::string line = proto::encode(proto::ReportMsg{remote_.job, mine});
  {
    std::lock_guard lock(mutex_);
    if (line == report_line_) return;  // sent ahead of next()
    report_line_ = line;
    failures_at_send_ = failures_;
    refusal_.clear();
    foreign_.reset();
  }
  client_->send(line);       // dropped if not connected; on_connected resends it
  client_->reconnect_now();  // no backoff wait at an epoch's end
}

// The daemon plans from the reports while the ranks gather them.
void RemotePlanner::send_ahead(const Report& mine) {
  if (mine.rank != rank_ || mine.epoch != plan().epoch) return;
  submit(mine);
}

Planned RemotePlanner::next(std::span<const Report> reports) {
  const std::int64_t want = plan().epoch + 1;
  for (const auto& r : reports)
    if (r.rank == rank_) submit(r);
  const auto waiting = Clock::now();
  std::string why;
  const std::optional<proto::PlanMsg> mine = wait_plan(want, why);
  waited_s_ = std::chrono::duration<double>(Clock::now() - waiting).count();
  const Word word = word_of(mine);
  std::vector<Word> all(static_cast<std::size_t>(world_));
  allgather_(&word, sizeof word, all.data());
  return conclude(reports, mine, all, want, why);
}

void RemotePlanner::share_ahead(const Report& mine, std::span<std::byte, kShareBytes> out) {
  send_ahead(mine);
  const auto waiting = Clock::now();
  ahead_why_.clear();
  ahead_ = wait_plan(plan().epoch + 1, ahead_why_);
  waited_s_ = std::chrono::duration<double>(Clock::now() - waiting).count();
  const Word word = word_of(ahead_);
  std::memcpy(out.data(), &word, sizeof word);
}

Planned RemotePlanner::next_gathered(std::span<const Report> reports,
                                     std::span<const std::byte> all) {
  if (all.size() != static_cast<std::size_t>(world_) * sizeof(Word))
    throw InputError(format("next_gathered: %zu bytes of shares, expected %d ranks' %zu bytes each",
                            all.size(), world_, sizeof(Word)));
  std::vector<Word> words(static_cast<std::size_t>(world_));
  std::memcpy(words.data(), all.data(), all.size());
  const std::int64_t want = plan().epoch + 1;
  const std::optional<proto::PlanMsg> mine = std::move(ahead_);
  ahead_.reset();
  return conclude(reports, mine, words, want, ahead_why_);
}

Planned RemotePlanner::conclude(std::span<const Report> reports,
                                const std::optional<proto::PlanMsg>& mine,
                                std::span<const Word> all, std::int64_t epoch,
                                const std::string& why) {
  fallback_why_ = {};
  const std::optional<Plan> plan = agree(mine, all, epoch, why);
  {
    std::lock_guard lock(mutex_);
    report_line_.clear();
  }
  if (plan) {
    if (fell_back_)
      log::info("epoch " + std::to_string(epoch + 1) + ": planned by the daemon again");
    fell_back_ = false;
    // The fallback observes every epoch, so it is as current as the daemon, and plans only
    // when its plan is used.
    fallback_.adopt(*plan, reports);
    return {*plan, "daemon"};
  }
  log::warn("epoch " + std::to_string(epoch + 1) +
            " uses the embedded policy: " + fallback_why_.why);
  fell_back_ = true;
  Planned embedded = fallback_.next(reports);
  embedded.source = "embedded-fallback";
  return embedded;
}

void RemotePlanner::finish(bool done) {
  std::unique_lock lock(mutex_);
  finishing_ = true;
  client_->send(proto::encode(proto::GoodbyeMsg{done}));
  // A stopped rank may have a second from its launcher before SIGKILL (mpirun): wait less.
  const auto wait = done ? std::chrono::milliseconds(1000) : std::chrono::milliseconds(200);
  changed_.wait_for(lock, wait, [this] { return said_goodbye_ || !connected_; });
  // The rank has left the job: no reconnecting (the daemon would refuse a finished job's rank).
  client_->stop();
}

}  // namespace

std::unique_ptr<Planner> make_remote(const Remote& remote, const Settings& settings,
                                     const Group& group) {
  return std::make_unique<RemotePlanner>(remote, settings, group);
}

}  // namespace dbs::planner

namespace dbs {

Fallback last_fallback(const Planner& planner) {
  const auto* remote = dynamic_cast<const planner::WithFallback*>(&planner);
  return remote ? remote->fallback() : Fallback{};
}

}  // namespace dbs
