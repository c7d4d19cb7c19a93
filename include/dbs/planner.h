// Who decides the plan (docs/concepts/architecture.md): one Planner owns the plan in force and
// makes every change to it, at epoch ends and inside epochs (rebalance_every). The embedded
// planner runs the policy on every rank (all ranks see the same reports, so all agree without a
// coordinator); the remote planner asks dbs-scheduler serve and keeps an embedded one as its
// fallback. The caller brings its ranks' allgather; dbs brings the plan.
#pragma once

#include <dbs/plan.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace dbs {

// A plan and where it came from: "initial", "embedded", "daemon", "embedded-fallback" (the
// daemon's plan was not usable) or "rebalance" (inside an epoch).
struct Planned {
  Plan plan;
  std::string source;
};

class Planner {
 public:
  virtual ~Planner() = default;
  // The plan in force: epoch 0's before any report, then the last one made or restored.
  virtual const Plan& plan() const = 0;
  // Epoch end: the plan of plan().epoch + 1 from all ranks' reports (identical on every rank,
  // one per rank); it becomes the plan in force. Throws InputError for a report of an unknown
  // rank or with negative or non-finite times.
  virtual Planned next(std::span<const Report> reports) = 0;
  // Epoch end, before the ranks gather their reports: this rank's own, the one next() will get
  // among all ranks'. A planner that plans elsewhere sends it now (the remote planner: the
  // daemon plans while the ranks gather); the others ignore it. Optional.
  virtual void send_ahead(const Report& /*mine*/) {}
  // Inside the epoch: a re-plan from all ranks' reports over the steps since the last re-plan.
  // A changed plan (for the same epoch) becomes the plan in force and is returned; nothing when
  // the plan stays.
  virtual std::optional<Planned> rebalance(std::span<const Report> window) = 0;
  // The estimator state of the policy that plans, to continue identically after a resume.
  virtual std::vector<double> state() const = 0;
  // Restores a checkpoint: the plan in force and state(). Throws InputError for a plan of
  // another world size or global batch, or a bad state.
  virtual void set_state(const Plan& plan, const std::vector<double>& state) = 0;
  // This rank leaves the job: done (all epochs trained) or stopped early (a signal; the job may
  // be resumed). The remote planner says goodbye to the daemon and stops connecting to it.
  virtual void finish(bool /*done*/) {}
};

// The caller's allgather over the job's ranks: every rank gives `bytes` bytes at `in`; `out`
// (world * bytes) receives rank r's at r * bytes. Called by all ranks in the same order (a
// collective); it throws (or the caller aborts the job) when it fails.
using Allgather = std::function<void(const void* in, std::size_t bytes, void* out)>;

// This rank's place in the job.
struct Group {
  int rank = 0;         // 0 <= rank < size
  int size = 1;         // ranks of the job (the world size)
  Allgather allgather;  // required when size > 1
  std::string host;     // this rank's host name, for the daemon ("" = this machine's name)
  std::string waiting;  // how the rank waits in collectives, for the daemon ("" = unsaid)
};

// The way to the daemon (dbs-scheduler serve): where it is, which job the ranks are and how they
// prove it. The default, no address, is no daemon: the embedded policy plans every epoch. C's
// dbs_remote handle and Python's dbs.Remote each hold one.
struct Remote {
  // How the ranks prove who they are to the daemon.
  enum class Auth {
    automatic,  // "auto": token_file when given, else a munge credential when the library has
                // munge (a munged that cannot encode leaves the register without one; the log
                // says why)
    token,      // "token": the job key in token_file
    munge,      // "munge": a munge credential of the user running the rank, encoded anew for
                // every register; the job belongs to that uid
  };
  std::string address;           // HOST:PORT of the daemon; empty = the embedded policy only
  std::string job;               // job id, the same on every rank (e.g. slurm-$SLURM_JOB_ID)
  std::string token_file;        // the job key (dbs-scheduler job-key), a file only its owner
                                 // may read
  double timeout_s = 10;         // wait this long at an epoch's end for the daemon's plan
  double connect_timeout_s = 2;  // one connection attempt, TLS handshake included
  std::string tls_ca;            // PEM CA file: TLS to the daemon, its certificate verified
                                 // against this CA and the HOST of address; empty = plain TCP
  Auth auth = Auth::automatic;
  std::string munge_socket;  // munged's socket; empty = munge's default

  bool operator==(const Remote&) const = default;
};

// The planner of a job, on every rank (a collective: one allgather). Every rank checks its
// settings and world size against rank 0's and its own remote (with an address: HOST:PORT, a
// job, timeouts > 0, a readable TLS CA and token file, a library with munge for Auth::munge),
// and the ranks allgather what they found, so that every rank throws the same ConfigError: the
// first setting where a rank differs from rank 0, or the remote of a rank at fault (that rank
// names the field, the others name the rank), and none is left waiting. Then: the embedded
// policy of settings (no remote.address), or the daemon at remote.address with the embedded
// policy as its fallback (sources "daemon" or "embedded-fallback"; it starts connecting at
// once; a daemon that cannot be reached or whose certificate the CA does not vouch for is no
// error). Also throws ConfigError for an unknown policy, a fixed: spec whose sizes do not number
// group.size or sum to the global batch, bounds the global batch cannot meet; InputError for a
// bad group.
std::unique_ptr<Planner> make_planner(const Settings& settings, const Group& group,
                                      const Remote& remote = {});

// Why the daemon's plan of the last epoch end was not used. The remote planner
// decides the cause from what every rank gave the allgather of next(), so after each next()
// every rank holds the same cause (and, for foreign, the same why).
struct Fallback {
  enum class Cause {
    none,     // the daemon planned (source "daemon"), or there is no daemon
    outage,   // the daemon was unreachable, late or refusing, its certificate untrusted, or the
              // ranks held different plans: the embedded policy planned, the job goes on
    foreign,  // a rank received a plan for another job: the address is not this job's daemon,
              // or the daemon is faulty; the embedded policy planned
  };
  Cause cause = Cause::none;
  std::string why;  // what the log says, e.g. "rank 1 received a plan for job 'b' from the
                    // daemon at head:7070, this is job 'a'" ("" with cause none)
};

// The Fallback of planner's last next() (cause none before the first, and always for the
// embedded planner).
Fallback last_fallback(const Planner& planner);

// Every rank's report in rank order from this rank's `mine` (a collective: one allgather).
// Throws InputError when a rank's report names another rank.
std::vector<Report> gather_reports(const Group& group, const Report& mine);

}  // namespace dbs
