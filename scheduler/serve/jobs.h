// The daemon's jobs, keyed by job id: registration, reports, the report timeout, planning,
// journalling and sending plans, goodbyes, and recovery from the state directory. Runs on the
// io thread; the methods that take a message throw ProtocolError for the peer (the caller
// sends it and closes that connection).
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lib/net/asio.h"
#include "lib/net/session.h"
#include "lib/proto/codec.h"
#include "scheduler/serve/caller.h"
#include "scheduler/serve/histogram.h"
#include "scheduler/serve/job.h"
#include "scheduler/serve/journal.h"
#include "scheduler/serve/retention.h"
#include "scheduler/serve/state_dir.h"

namespace dbs::scheduler {

// Who a connection is, once registered.
struct Peer {
  std::string job;
  int rank = -1;
  std::uint64_t serial = 0;  // LiveJob::serial of the job it registered with
};

struct LiveJob {
  LiveJob(net::asio::io_context& io, std::unique_ptr<Job> j, std::uint64_t serial);
  std::unique_ptr<Job> job;
  std::uint64_t serial;                // unique per daemon: a job id created again is another job
  std::optional<std::uint32_t> owner;  // the uid that created it (caller.h); none = the admin's
  std::vector<net::LineSession*> sessions;                // by rank; nullptr = not connected
  std::vector<char> done;                                 // ranks that said goodbye with done
  net::asio::steady_timer timer;                          // report timeout of the running epoch
  net::Clock::time_point last_seen = net::Clock::now();   // a rank was last connected
  net::Clock::time_point planned_at = net::Clock::now();  // the running epoch's plan was sent
  std::chrono::system_clock::time_point last_report{};    // a rank last reported (epoch 0: none)
  std::shared_ptr<const proto::PlanLines> plan;           // the last durable plan (or none)
  bool finished = false;
  // No rank connected for lost_after_s past the time the running epoch was due to end (its plan
  // sent + its predicted epoch time): the agents are gone (Ctrl-C, a killed allocation). Cleared
  // when a rank registers again; abandon_after_s later the job is finished.
  bool lost = false;
  // Its ranks said goodbye without done: stopped on purpose (Ctrl-C, SIGTERM, a preempted or
  // timed-out allocation) after writing their checkpoint, so it can be resumed. Journalled;
  // cleared when a rank registers again; abandon_after_s later the job is finished.
  bool stopped = false;
  int connected() const;
  const char* state() const {
    return finished ? "finished" : stopped ? "stopped" : lost ? "lost" : "running";
  }
  // The plan an operator is shown: the running epoch's, or for a finished job the last one that
  // ran (Job::ran; the initial plan when none ran). The epoch it shows counts from 1 (0: none ran).
  const Plan& shown_plan() const;
  std::int64_t shown_epoch() const;
  void set_plan(Plan durable);
  // Sends `rank` its share of the durable plan (protocol.h, step 4), if connected.
  void send_plan(int rank) const;
};

struct JobLimits {
  double report_timeout_s = 5;     // plan an epoch this long after its first report
  std::size_t max_jobs = 1000;     // running jobs at once
  double abandon_after_s = 86400;  // finish a running job no rank was connected to this long
  int max_world = 65536;           // ranks per job
  double lost_after_s = 120;       // mark a job lost this long after its epoch was due (LiveJob)
  RetentionLimits retention;       // finished traces and quarantined files kept (retention.h)
};

class JobTable {
 public:
  JobTable(net::asio::io_context& io, Journal& journal, const JobLimits& limits);

  // Loads the jobs of the journal in dir, rewrites their traces from it (a finished job's trace
  // keeps its time) and compacts it to the jobs still running, then applies the retention. A job
  // whose records cannot be restored is quarantined (state_dir.h), the others are restored. Call
  // before the journal starts. Throws InputError only when the directory cannot be read or written.
  void restore(const std::string& dir);
  struct Quarantined {
    std::string job;   // "" for journal lines that name no job
    std::string why;   // the journal line and what is wrong with it
    std::string path;  // where its journal lines are now
  };
  const std::vector<Quarantined>& quarantined() const { return quarantined_; }

  // caller: who presented m (AgentHandler::authenticate); refused with ProtocolError(auth) when
  // the job exists and may_use(caller, its owner) says no.
  void on_register(net::LineSession& session, const proto::RegisterMsg& m, Peer& peer,
                   double idle_s, const Caller& caller = {});
  void on_report(net::LineSession& session, const Peer& peer, const proto::ReportMsg& m);
  void on_goodbye(const net::LineSession& session, const Peer& peer, bool done);
  void on_close(net::LineSession& session, const Peer& peer);
  void stop();  // cancels the timers
  // A job that lost all its ranks without goodbye (the job crashed) is marked lost after
  // lost_after_s and finished after abandon_after_s; this checks every so often from now on.
  void start_sweeps();

  const std::map<std::string, std::unique_ptr<LiveJob>>& jobs() const { return jobs_; }
  // Jobs not finished (lost and stopped ones included): what --max-jobs limits.
  std::size_t running() const { return jobs_.size() - finished_.size(); }
  std::size_t in_state(const char* state) const;  // LiveJob::state()
  // Seconds from the report that completed an epoch (or its report timeout) to its plan being
  // sent to the ranks: planning plus the journal sync.
  const Histogram& plan_latency() const { return plan_latency_; }
  double report_timeout_s() const { return limits_.report_timeout_s; }
  const Retention& retention() const { return retention_; }

  // Finished jobs still shown: the newest kFinishedKept (fewer with --keep-finished, and none
  // past --retention).
  static constexpr std::size_t kFinishedKept = 100;
  static constexpr int kCompactEvery = 64;  // the journal drops finished jobs this often

 private:
  LiveJob& create(const proto::RegisterMsg& m, const Caller& caller);
  // Journals a state change of a job that is not finished ("stopped", "running").
  void journal_state(const LiveJob& live, const char* type);
  void apply(const JournalRecord& record, std::map<std::string, std::string>& traces);
  // The job of peer when session is still its rank's current connection, else nullptr (the
  // job finished and was forgotten, was created again, or a newer connection took the rank).
  LiveJob* held_by(const net::LineSession& session, const Peer& peer);
  void arm_timeout(LiveJob& live);
  void plan_epoch(LiveJob& live);
  void finish(LiveJob& live, const std::string& why);
  void sweep();
  // Forgets the finished jobs past the retention and removes their traces (through the journal's
  // writer, which owns traces/), and the quarantined files past it.
  void prune();
  // Runs on the io thread once the plan is journalled: remember it and send it to the ranks.
  // planned_at: when planning started (timed into plan_latency); none for a job's first plan.
  std::function<void()> deliver(const std::string& job, Plan plan,
                                std::optional<net::Clock::time_point> planned_at = {});

  net::asio::io_context& io_;
  Journal& journal_;
  JobLimits limits_;
  net::asio::steady_timer sweep_;
  std::map<std::string, std::unique_ptr<LiveJob>> jobs_;
  std::deque<std::string> finished_;  // shown, oldest first
  Retention retention_{limits_.retention};
  std::uint64_t serials_ = 0;
  int finished_since_compaction_ = 0;
  std::vector<Quarantined> quarantined_;
  Histogram plan_latency_{plan_latency_buckets()};
};

// The header and initial plan lines of a job's trace.
std::string trace_start(const Job& job);

}  // namespace dbs::scheduler
