// The plan from dbs-scheduler serve, with the embedded policy as the fallback. Every rank keeps
// a connection to the daemon (registering on each connect), sends its report at the end of
// each epoch and waits for its share of the daemon's plan of the next one. The ranks then
// rebuild the plan from their shares (one allgather, lib/proto/share.h): the daemon's plan is
// used only when every rank holds a share of the same valid one. Otherwise - daemon unreachable, late, refusing, or ranks
// disagreeing - the epoch uses the embedded policy, which runs every epoch anyway so that its
// estimates stay current; the log and the trace (plan source "embedded-fallback") say so, and
// the next epoch tries the daemon again.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "agents/options.h"
#include "lib/comm/communicator.h"
#include "lib/net/asio.h"
#include "lib/net/client.h"
#include "lib/policy/policy.h"
#include "lib/proto/messages.h"
#include "lib/train/trainer.h"

namespace dbs::agent {

class DaemonPlanner : public train::Planner {
 public:
  // Starts connecting at once. Throws ConfigError for a bad address or token file.
  DaemonPlanner(const SchedulerOptions& options, comm::Communicator& comm,
                const policy::Settings& settings);
  ~DaemonPlanner() override;
  DaemonPlanner(const DaemonPlanner&) = delete;
  DaemonPlanner& operator=(const DaemonPlanner&) = delete;

  policy::Plan next(const policy::Plan& current, const std::vector<policy::Report>& reports,
                    std::string& source) override;
  // Tells the daemon this rank is done (waits up to a second for its answer).
  void finish();

  int daemon_epochs() const { return daemon_epochs_; }      // epochs planned by the daemon
  int fallback_epochs() const { return fallback_epochs_; }  // epochs on the embedded policy

 private:
  void on_connected();
  void on_line(std::string_view line);
  void on_lost(const std::string& why);
  // This rank's share of the daemon's plan of `epoch`, or nothing with `why` set. Blocks up to
  // the timeout.
  std::optional<proto::PlanMsg> wait_plan(std::int64_t epoch, std::string& why);
  // The plan every rank holds a share of (the same verdict on every rank), or nothing.
  std::optional<policy::Plan> agree(const std::optional<proto::PlanMsg>& mine, std::int64_t epoch,
                                    std::string& why);

  SchedulerOptions options_;
  comm::Communicator& comm_;
  policy::Settings settings_;
  int world_, rank_;
  std::string register_line_;
  std::unique_ptr<policy::Policy> embedded_;
  net::asio::io_context io_;
  std::shared_ptr<net::LineClient> client_;
  std::thread thread_;

  std::mutex mutex_;  // guards what follows; the io thread writes, next() reads
  std::condition_variable changed_;
  bool connected_ = false, said_goodbye_ = false, ever_connected_ = false, finishing_ = false;
  int failures_ = 0;                  // failed attempts and lost connections so far
  std::string lost_why_, refusal_;    // last failure; last error message of the daemon
  std::optional<proto::PlanMsg> plan_;  // latest share of a plan received
  std::string report_line_;           // resent on every connect until its plan arrives

  bool fell_back_ = false;  // the last epoch did not get the daemon's plan
  int daemon_epochs_ = 0, fallback_epochs_ = 0;
};

}  // namespace dbs::agent
