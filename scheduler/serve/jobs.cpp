#include "scheduler/serve/jobs.h"

#include <algorithm>
#include <string_view>

#include "lib/common/error.h"
#include "lib/common/format.h"
#include "lib/common/log.h"
#include "lib/net/printable.h"
#include "lib/proto/checks.h"
#include "lib/proto/codec.h"
#include "lib/trace/trace.h"
#include "scheduler/serve/state_dir.h"

namespace dbs::scheduler {
namespace {

using proto::ErrorCode;
using proto::ProtocolError;

}  // namespace

LiveJob::LiveJob(net::asio::io_context& io, std::unique_ptr<Job> j, std::uint64_t n)
    : job(std::move(j)),
      serial(n),
      sessions(static_cast<std::size_t>(job->world()), nullptr),
      done(static_cast<std::size_t>(job->world()), 0),
      timer(io) {}

int LiveJob::connected() const {
  int n = 0;
  for (const auto* s : sessions) n += s != nullptr ? 1 : 0;
  return n;
}

const Plan& LiveJob::shown_plan() const {
  if (!finished) return job->current();
  return job->ran() != nullptr ? *job->ran() : job->initial();
}

std::int64_t LiveJob::shown_epoch() const {
  if (finished && job->ran() == nullptr) return 0;
  return shown_plan().epoch + 1;
}

void LiveJob::set_plan(Plan durable) {
  plan = std::make_shared<const proto::PlanLines>(job->id(), std::move(durable));
}

void LiveJob::send_plan(int rank) const {
  net::LineSession* s = sessions[static_cast<std::size_t>(rank)];
  if (s != nullptr && plan != nullptr)
    s->send(std::make_shared<const std::string>(plan->line(rank)));
}

std::string trace_start(const Job& job) {
  const nlohmann::json run = {{"job", job.id()}, {"recorder", "dbs-scheduler serve"}};
  return trace::header(trace::run_config(job.config(), job.world(), run)).dump() + "\n" +
         trace::plan_record(job.initial(), 0, "initial").dump() + "\n";
}

JobTable::JobTable(net::asio::io_context& io, Journal& journal, const JobLimits& limits)
    : io_(io), journal_(journal), limits_(limits), sweep_(io) {}

std::size_t JobTable::in_state(const char* state) const {
  std::size_t n = 0;
  for (const auto& [id, live] : jobs_) n += std::string_view(live->state()) == state ? 1 : 0;
  return n;
}

void JobTable::journal_state(const LiveJob& live, const char* type) {
  const nlohmann::json record = {
      {"type", type}, {"job", live.job->id()}, {"epoch", live.job->current().epoch}};
  Journal::Entry e;
  e.line = record.dump() + "\n";
  e.job = live.job->id();
  journal_.append(std::move(e));
}

void JobTable::start_sweeps() {
  double every_s = std::min({60.0, limits_.abandon_after_s / 4, limits_.lost_after_s / 4});
  if (limits_.retention.retention_s > 0)
    every_s = std::min(every_s, limits_.retention.retention_s / 4);
  every_s = std::max(0.01, every_s);
  sweep_.expires_after(
      std::chrono::duration_cast<net::Clock::duration>(std::chrono::duration<double>(every_s)));
  sweep_.async_wait([this](const net::error_code& ec) {
    if (ec) return;  // stopping
    sweep();
    start_sweeps();
  });
}

void JobTable::sweep() {
  const auto now = net::Clock::now();
  const auto limit = std::chrono::duration<double>(limits_.abandon_after_s);
  const auto lost_after = std::chrono::duration<double>(limits_.lost_after_s);
  std::vector<std::string> abandoned;
  for (const auto& [id, live] : jobs_) {
    if (live->finished || live->connected() > 0) continue;
    if (now - live->last_seen > limit) abandoned.push_back(id);
    if (live->stopped) continue;  // not lost: its agents said they stopped
    const auto due = live->planned_at +
                     std::chrono::duration_cast<net::Clock::duration>(
                         std::chrono::duration<double>(live->job->current().predicted_epoch_s));
    if (!live->lost && now - std::max(live->last_seen, due) > lost_after) {
      live->lost = true;
      log::warn("job '" + id + "' lost: no rank connected for " +
                format_seconds(limits_.lost_after_s) + " after epoch " +
                std::to_string(live->job->current().epoch + 1) + " was due");
    }
  }
  for (const auto& id : abandoned)
    finish(*jobs_.at(id),
           "abandoned: no rank connected for " + format_seconds(limits_.abandon_after_s));
  prune();
}

void JobTable::prune() {
  for (const std::string& id : retention_.due(std::chrono::system_clock::now())) {
    const auto it = jobs_.find(id);
    if (it != jobs_.end() && it->second->finished) {
      jobs_.erase(it);
      std::erase(finished_, id);
    }
    if (journal_.enabled()) {  // journalled, so that a restart does not bring the job back
      Journal::Entry e;
      e.line = nlohmann::json{{"type", "pruned"}, {"job", id}}.dump() + "\n";
      e.job = id;
      e.remove_trace = true;
      journal_.append(std::move(e));
    }
    log::info("job '" + id + "' pruned: its trace is past --keep-finished or --retention");
  }
}

LiveJob& JobTable::create(const proto::RegisterMsg& m, const Caller& caller) {
  if (!m.config) throw ProtocolError(ErrorCode::unknown_job, "unknown job '" + m.job + "'");
  if (m.world > limits_.max_world)
    throw ProtocolError(ErrorCode::limit, "a job of " + std::to_string(m.world) +
                                              " ranks is over this daemon's limit of " +
                                              std::to_string(limits_.max_world) + " (--max-world)");
  if (running() >= limits_.max_jobs)
    throw ProtocolError(ErrorCode::limit,
                        "too many jobs (limit " + std::to_string(limits_.max_jobs) + ")");
  std::unique_ptr<Job> job;
  try {
    job = std::make_unique<Job>(m.job, m.world, *m.config);
  } catch (const ConfigError& e) {
    throw ProtocolError(ErrorCode::invalid, e.what());
  }
  auto& live = *(jobs_[m.job] = std::make_unique<LiveJob>(io_, std::move(job), ++serials_));
  live.owner = caller.owner();
  retention_.reopened(m.job);  // its old trace, if still kept, is overwritten
  nlohmann::json record = {{"type", "job"},
                           {"job", m.job},
                           {"world", m.world},
                           {"config", policy::to_json(*m.config)},
                           {"initial", policy::to_json(live.job->initial())}};
  if (live.owner) record["owner"] = *live.owner;
  Journal::Entry e;
  e.line = record.dump() + "\n";
  e.job = m.job;
  e.trace = trace_start(*live.job);
  e.new_trace = true;
  e.done = deliver(m.job, live.job->current());
  journal_.append(std::move(e));
  log::info("job '" + m.job + "' created: " + std::to_string(m.world) + " ranks, policy " +
            to_string(m.config->policy) + ", global batch " +
            std::to_string(m.config->global_batch) + ", created with " + caller.describe());
  return live;
}

void JobTable::on_register(net::LineSession& session, const proto::RegisterMsg& m, Peer& peer,
                           double idle_s, const Caller& caller) {
  const auto it = jobs_.find(m.job);
  LiveJob& live = it == jobs_.end() ? create(m, caller) : *it->second;
  if (it != jobs_.end()) {
    if (!may_use(caller, live.owner))
      throw ProtocolError(ErrorCode::auth, "job '" + m.job + "' belongs to " +
                                               (live.owner ? "another user" : "the admin") +
                                               ", not " + caller.describe());
    if (live.finished) throw ProtocolError(ErrorCode::state, "job '" + m.job + "' has finished");
    proto::check_join(m.job, live.job->world(), live.job->config(), m);
  }
  auto& slot = live.sessions[static_cast<std::size_t>(m.rank)];
  if (slot != nullptr && slot != &session) {
    net::LineSession* old = slot;
    slot = nullptr;
    old->fail(ErrorCode::conflict, "replaced by a newer connection of rank " +
                                       std::to_string(m.rank) + " of job '" + m.job + "'");
  }
  slot = &session;
  live.last_seen = net::Clock::now();
  if (live.lost || live.stopped) {
    if (live.stopped) journal_state(live, "running");
    live.lost = live.stopped = false;
    log::info("job '" + m.job + "' running again: rank " + std::to_string(m.rank) + " registered");
  }
  live.job->set_rank_info(m.rank, {m.host, m.waiting});
  peer = {m.job, m.rank, live.serial};
  session.set_registered(idle_s);
  live.send_plan(m.rank);
}

void JobTable::on_report(net::LineSession& session, const Peer& peer, const proto::ReportMsg& m) {
  if (jobs_.find(m.job) == jobs_.end())
    throw ProtocolError(ErrorCode::unknown_job, "unknown job '" + m.job + "'");
  if (m.job != peer.job)
    throw ProtocolError(
        ErrorCode::state,
        "report for job '" + m.job + "' on a connection registered for job '" + peer.job + "'");
  LiveJob* held = held_by(session, peer);
  if (held == nullptr)
    throw ProtocolError(ErrorCode::state, "this connection no longer holds rank " +
                                              std::to_string(peer.rank) + " of job '" + peer.job +
                                              "'");
  LiveJob& live = *held;
  proto::check_rank(m.report.rank, live.job->world());
  if (m.report.rank != peer.rank)
    throw ProtocolError(ErrorCode::state, "report for rank " + std::to_string(m.report.rank) +
                                              " on a connection registered as rank " +
                                              std::to_string(peer.rank));
  if (live.finished) throw ProtocolError(ErrorCode::state, "job '" + m.job + "' has finished");
  live.last_report = std::chrono::system_clock::now();
  switch (live.job->add(m.report)) {
    case Job::Accepted::first:
      arm_timeout(live);
      break;
    case Job::Accepted::pending:
      break;
    case Job::Accepted::complete:
      live.timer.cancel();
      plan_epoch(live);
      break;
    case Job::Accepted::duplicate:  // a resend after a reconnect: the plan made from it
      if (live.plan && live.plan->plan().epoch == live.job->current().epoch)
        live.send_plan(peer.rank);
      break;
  }
}

void JobTable::arm_timeout(LiveJob& live) {
  live.timer.expires_after(std::chrono::duration_cast<net::Clock::duration>(
      std::chrono::duration<double>(limits_.report_timeout_s)));
  live.timer.async_wait(
      [this, id = live.job->id(), epoch = live.job->current().epoch](const net::error_code& ec) {
        if (ec) return;  // cancelled: planned in time, or shutting down
        const auto it = jobs_.find(id);
        if (it == jobs_.end() || it->second->finished) return;
        LiveJob& l = *it->second;
        if (!l.job->has_pending() || l.job->current().epoch != epoch) return;
        try {  // a handler never throws out of the io loop
          plan_epoch(l);
        } catch (const std::exception& e) {
          log::error("job '" + id +
                     "': planning at the report timeout failed: " + net::printable(e.what()));
        }
      });
}

void JobTable::plan_epoch(LiveJob& live) {
  const auto started = net::Clock::now();
  Job& job = *live.job;
  EpochOutcome o = job.plan(limits_.report_timeout_s);
  job.commit(o);
  if (!o.missing.empty())
    log::warn("job '" + job.id() + "' epoch " + std::to_string(o.epoch + 1) + " planned at the " +
              "report timeout: " + net::printable(o.plan.reason));
  log::debug("job '" + job.id() + "' epoch " + std::to_string(o.plan.epoch + 1) + ": " +
             net::printable(o.plan.reason));
  Journal::Entry e;
  e.done = deliver(job.id(), o.plan, started);
  if (journal_.enabled()) {  // without a state directory there is nothing to write
    e.job = job.id();
    auto shared = std::make_shared<const std::pair<EpochOutcome, std::vector<RankInfo>>>(
        std::move(o), job.rank_info());
    e.render_line = [shared](Journal::Entry& entry) {
      entry.line = outcome_json(entry.job, shared->first, shared->second).dump() + "\n";
    };
    e.render_trace = [shared](Journal::Entry& entry) {
      entry.trace = trace_lines(shared->first, shared->second);
    };
  }
  journal_.append(std::move(e));
}

std::function<void()> JobTable::deliver(const std::string& job, Plan plan,
                                        std::optional<net::Clock::time_point> planned_at) {
  return [this, job, plan = std::move(plan), planned_at] {
    const auto it = jobs_.find(job);
    if (it == jobs_.end()) return;
    LiveJob& live = *it->second;
    live.set_plan(plan);
    live.planned_at = net::Clock::now();
    if (planned_at)
      plan_latency_.observe(std::chrono::duration<double>(live.planned_at - *planned_at).count());
    for (int r = 0; r < live.job->world(); ++r) live.send_plan(r);
  };
}

LiveJob* JobTable::held_by(const net::LineSession& session, const Peer& peer) {
  const auto it = jobs_.find(peer.job);
  if (it == jobs_.end() || peer.rank < 0) return nullptr;
  LiveJob& live = *it->second;
  if (live.serial != peer.serial || peer.rank >= live.job->world() ||
      live.sessions[static_cast<std::size_t>(peer.rank)] != &session)
    return nullptr;
  return &live;
}

void JobTable::on_goodbye(const net::LineSession& session, const Peer& peer, bool done) {
  LiveJob* held = held_by(session, peer);
  if (held == nullptr || held->finished) return;
  LiveJob& live = *held;
  if (!done) {  // stopped early; the other ranks stop after the same step and say so too
    if (live.stopped) return;
    live.stopped = true;
    journal_state(live, "stopped");
    log::info("job '" + live.job->id() + "' stopped by its agents in epoch " +
              std::to_string(live.job->current().epoch + 1) + " (rank " +
              std::to_string(peer.rank) + " said goodbye; a resumed job runs again)");
    return;
  }
  live.done[static_cast<std::size_t>(peer.rank)] = 1;
  for (const char d : live.done)
    if (!d) return;
  finish(live, "finished");
}

void JobTable::finish(LiveJob& live, const std::string& why) {
  live.finished = true;
  live.timer.cancel();
  const std::string id = live.job->id();
  const nlohmann::json record = {{"type", "finished"}, {"job", id}};
  Journal::Entry e;
  e.line = record.dump() + "\n";
  e.job = id;
  e.end_trace = true;
  if (++finished_since_compaction_ >= kCompactEvery) {
    e.compact = true;
    finished_since_compaction_ = 0;
  }
  journal_.append(std::move(e));
  log::info("job '" + id + "' " + why + " after " + std::to_string(live.job->plans()) +
            " planned epochs");
  finished_.push_back(id);
  if (finished_.size() > kFinishedKept) {
    jobs_.erase(finished_.front());
    finished_.pop_front();
  }
  retention_.finished(id, std::chrono::system_clock::now());
  prune();
}

void JobTable::on_close(net::LineSession& session, const Peer& peer) {
  LiveJob* held = held_by(session, peer);
  if (held == nullptr) return;
  held->sessions[static_cast<std::size_t>(peer.rank)] = nullptr;
  held->last_seen = net::Clock::now();
}

void JobTable::stop() {
  sweep_.cancel();
  for (auto& [id, live] : jobs_) live->timer.cancel();
}

}  // namespace dbs::scheduler
