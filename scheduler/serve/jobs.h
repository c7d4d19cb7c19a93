// The daemon's jobs, keyed by job id: registration, reports, the report timeout, planning,
// journalling and sending plans, goodbyes, and recovery from the state directory. Runs on the
// io thread; the methods that take a message throw ProtocolError for the peer (the caller
// sends it and closes that connection).
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lib/net/asio.h"
#include "lib/net/session.h"
#include "lib/proto/codec.h"
#include "scheduler/serve/job.h"
#include "scheduler/serve/journal.h"

namespace dbs::scheduler {

// Who a connection is, once registered.
struct Peer {
  std::string job;
  int rank = -1;
};

struct LiveJob {
  LiveJob(net::asio::io_context& io, std::unique_ptr<Job> j);
  std::unique_ptr<Job> job;
  std::vector<net::LineSession*> sessions;               // by rank; nullptr = not connected
  std::vector<char> done;                                // ranks that said goodbye with done
  net::asio::steady_timer timer;                         // report timeout of the running epoch
  net::Clock::time_point last_seen = net::Clock::now();  // a rank was last connected
  std::shared_ptr<const proto::PlanLines> plan;          // the last durable plan (or none)
  bool finished = false;
  int connected() const;
  void set_plan(policy::Plan durable);
  // Sends `rank` its share of the durable plan (protocol.h, step 4), if connected.
  void send_plan(int rank) const;
};

class JobTable {
 public:
  JobTable(net::asio::io_context& io, Journal& journal, double report_timeout_s,
           std::size_t max_jobs, double abandon_after_s);

  // Loads the jobs of the journal in dir, rewrites their traces from it and compacts it to the
  // jobs still running. Call before the journal starts. Throws InputError.
  void restore(const std::string& dir);

  void on_register(net::LineSession& session, const proto::RegisterMsg& m, Peer& peer,
                   double idle_s);
  void on_report(net::LineSession& session, const Peer& peer, const proto::ReportMsg& m);
  void on_goodbye(const Peer& peer, bool done);
  void on_close(net::LineSession& session, const Peer& peer);
  void stop();  // cancels the timers
  // A job that lost all its ranks without goodbye (the job crashed) is finished after
  // abandon_after_s; this checks every so often from now on.
  void start_sweeps();

  const std::map<std::string, std::unique_ptr<LiveJob>>& jobs() const { return jobs_; }
  std::size_t running() const { return jobs_.size() - finished_.size(); }
  double report_timeout_s() const { return report_timeout_s_; }

  static constexpr std::size_t kFinishedKept = 100;  // finished jobs still shown

 private:
  LiveJob& create(const proto::RegisterMsg& m);
  void arm_timeout(LiveJob& live);
  void plan_epoch(LiveJob& live);
  void finish(LiveJob& live, const std::string& why);
  void sweep();
  // Runs on the io thread once the plan is journalled: remember it and send it to the ranks.
  std::function<void()> deliver(const std::string& job, policy::Plan plan);

  net::asio::io_context& io_;
  Journal& journal_;
  double report_timeout_s_;
  std::size_t max_jobs_;
  double abandon_after_s_;
  net::asio::steady_timer sweep_;
  std::map<std::string, std::unique_ptr<LiveJob>> jobs_;
  std::deque<std::string> finished_;  // oldest first
};

// The header and initial plan lines of a job's trace.
std::string trace_start(const Job& job);

}  // namespace dbs::scheduler
