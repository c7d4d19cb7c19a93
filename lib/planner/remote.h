// The remote planner: the plan from dbs-scheduler serve, with an embedded planner as the
// fallback. Every rank keeps a connection to the daemon (registering on each connect), sends its
// report at the end of each epoch (send_ahead: before the ranks gather the reports, so that the
// daemon plans meanwhile) and waits for its share of the daemon's plan of the next one.
// The ranks then rebuild the plan from their shares (one allgather, lib/proto/share.h, or the
// caller's gather of the reports: SharesAhead): the daemon's plan is used only when every rank
// holds a share of the same valid one. Otherwise -
// daemon unreachable, late, refusing, sending a plan of another job, or ranks disagreeing - the
// epoch uses the fallback's plan and records why (a Fallback whose cause is the same on every
// rank: a rank that received a plan of another job says so in the same allgather as the
// shares). The fallback observes every epoch anyway, so its estimates stay current (they are
// what a checkpoint keeps), and plans only when the daemon's plan cannot be used. The log and
// the trace (plan source "embedded-fallback") say so, and the next epoch tries the daemon again.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "lib/planner/planner.h"

namespace dbs::planner {

// What the remote planner says about its last epoch end (dbs::last_fallback reads it).
class WithFallback {
 public:
  virtual ~WithFallback() = default;
  virtual const Fallback& fallback() const = 0;
  // Seconds the last epoch end waited for this rank's share of the daemon's plan: from the start
  // of the wait (in next(), or in share_ahead) to the share's arrival, or to giving up.
  virtual double waited_s() const = 0;
};

// The bytes of what a rank holds of the daemon's plan: its share, or the job of a plan it
// received for another job instead.
inline constexpr std::size_t kShareBytes = 96;

// The remote planner's shares may travel in the caller's gather of the epoch's reports rather
// than in an allgather of their own (one collective at the epoch end, not two): share_ahead
// sends this rank's report, waits for its share and gives the bytes to gather, and
// next_gathered plans from every rank's. The caller's ranks all take this way or all call next().
class SharesAhead {
 public:
  virtual ~SharesAhead() = default;
  // send_ahead(mine), then a wait (up to the remote's timeout) for this rank's share of the
  // daemon's plan of the next epoch; `out` gets what the other ranks must see of it.
  virtual void share_ahead(const Report& mine, std::span<std::byte, kShareBytes> out) = 0;
  // next(reports) from `all`: every rank's share_ahead bytes in rank order (world *
  // kShareBytes). The same verdict on every rank, and no collective. Throws InputError for
  // `all` of another size.
  virtual Planned next_gathered(std::span<const Report> reports,
                                std::span<const std::byte> all) = 0;
};

// A planner that asks the daemon at remote.address, with an Embedded planner of settings as the
// fallback; source "daemon" or "embedded-fallback", in-epoch re-plans stay embedded. The ranks
// agree on the daemon's plan through group.allgather. Starts connecting at once; finish(done)
// says goodbye (done = false: stopped early). The ranks prove who they are with the token file
// or a munge credential per register (remote.auth). Throws ConfigError for a bad address, token
// or CA file. make_planner (<dbs/planner.h>) is the public way to one, after it checked the
// settings and the remote on every rank.
std::unique_ptr<Planner> make_remote(const Remote& remote, const Settings& settings,
                                     const Group& group);

}  // namespace dbs::planner
