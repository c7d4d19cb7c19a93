// How a rank waits for the others in a collective (docs/concepts/exchange.md, "Waiting").
//   spin:  the collective blocks in MPI, which busy-polls its transport: lowest latency, but a
//          waiting rank burns a full core, its CPU quota if it has one, and a core that another
//          process on an oversubscribed node could use.
//   sleep: the rank first joins a non-blocking barrier and polls it with MPI_Test, sleeping
//          between polls (kMinSleep doubling up to kMaxSleep) after kArriveSpin of polling
//          without sleeps; once every rank has arrived the data moves in the collective's
//          non-blocking form, polled without sleeps for up to kDataSpin, then with sleeps of
//          at most kDataSleep. A blocking collective would spin for the whole transfer, which
//          on a slow link costs a quota-limited rank much of its CPU. Polling with sleeps from
//          the start would slow a short transfer several-fold (MPI moves non-blocking data only
//          inside MPI calls, and each sleep outlasts its request by the timer slack); kDataSpin
//          covers a shared-memory transfer of the cnn's gradient and bounds the CPU a slow link
//          costs to it per collective. Costs one
//          barrier and up to kMaxSleep of latency per collective. An allgather of at most
//          kControlBytes a rank (the control plane's) has no barrier before it: it is a gather
//          to rank 0 and a broadcast, each polled as the barrier's would be (a few KiB a rank
//          move within them), in which every rank waits once or twice. The
//          sharded update's reduce-scatter and allgather then go around the own ring
//          (lib/comm/ring.h), every rank polling its messages as its own wait says: each ring
//          step's messages without sleeps for up to kDataSpin, then with sleeps. --overlap's
//          started allreduces are finished the same way: a barrier (polled without sleeps for
//          up to kDataSpin, as the data of the last buckets moves ahead of it), then the data.
//   auto:  sleep on a rank whose cgroup's CPU quota (read_cpu_quota) is below its thread count,
//          spin elsewhere. A rank whose quota covers all its threads cannot be throttled for
//          spinning (one waiting thread uses at most one core). Spinning stays auto's choice
//          where a host's ranks run more threads than it has cores: there sleeping does not make
//          balanced epochs faster, and the wake-ups add latency.
// The barrier is a collective, so it runs on every rank as soon as any rank sleeps; a spinning
// rank then waits for it with MPI_Wait.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <span>
#include <string>

namespace dbs::comm {

enum class Wait { spin, sleep, automatic };

// "spin", "sleep" or "auto"; anything else throws ConfigError.
Wait parse_wait(const std::string& name);
const char* to_string(Wait wait);

// automatic's rule: sleep when 0 < quota_cores < threads (quota_cores 0: no quota).
Wait automatic_wait(double quota_cores, int threads);

// spin or sleep, and why (for the rank's log line: "--wait sleep", "auto: no CPU quota", "auto:
// CPU quota of 0.33 core(s) for 1 thread(s)").
struct WaitChoice {
  Wait wait = Wait::spin;
  std::string why;
};
// wait as requested, automatic resolved for a rank of `threads` threads by its cgroup's CPU
// quota (read_cpu_quota).
WaitChoice resolve_wait(Wait wait, int threads = 1);

inline constexpr std::chrono::microseconds kMinSleep{20};
inline constexpr std::chrono::microseconds kMaxSleep{1000};
inline constexpr std::chrono::microseconds kDataSleep{100};
inline constexpr std::chrono::microseconds kArriveSpin{50};
// An allgather of at most this many bytes a rank (the control plane's reports and words) is
// polled as the barrier is, with no barrier before it.
inline constexpr std::size_t kControlBytes = 4096;
inline constexpr std::chrono::microseconds kDataSpin{500};

// Completes request: MPI_Wait when spin, else MPI_Test without sleeps for up to spin_first,
// then with backoff sleeps (kMinSleep doubling up to max_sleep). Throws CommError.
void await(MPI_Request& request, Wait wait, std::chrono::microseconds max_sleep = kMaxSleep,
           std::chrono::microseconds spin_first = kArriveSpin);
// The same for all of requests (MPI_Waitall / MPI_Testall).
void await_all(std::span<MPI_Request> requests, Wait wait,
               std::chrono::microseconds max_sleep = kMaxSleep,
               std::chrono::microseconds spin_first = kArriveSpin);

}  // namespace dbs::comm
