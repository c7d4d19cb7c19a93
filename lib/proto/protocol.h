// The agent <-> daemon protocol of dbs, step by step. Pure definitions: the structs are in
// lib/proto/messages.h, their JSON form in lib/proto/codec.h, the framing in lib/proto/framing.h
// and the checks that need a job in lib/proto/checks.h. No sockets here (lib/net does those).
//
// Transport: TCP. Every message is one JSON object on one line ending in "\n" (a "\r" before it
// is dropped; empty lines are ignored), at most kMaxMessage bytes without the newline. Every
// object carries "v" (the protocol version, kVersion) and "type"; the order of fields does not
// matter. Fields not listed below are ignored, so a version may gain fields; a change of meaning
// bumps kVersion (version 2: each rank gets its share of a plan, step 4; version 1 sent every
// rank the whole plan). Epochs count from 1 on the wire, as in traces (the structs in memory
// count from 0, as lib/policy does). Times are seconds, finite and >= 0; JSON has no NaN, and a
// null where a number belongs is refused like any other wrong type.
//
//  1. The agent (one per rank) connects and sends `register`:
//       {"v":2,"type":"register","job":"J","token":"T","rank":R,"world":W,"host":"H",
//        "config":{"policy":"dbs","global_batch":B,"samples_per_epoch":N,"min_batch":1,
//                  "max_batch":0,"min_gain":0.02,"rebalance_every":0}}
//     "config" is the policy Settings' JSON form (lib/policy/plan.h). An optional "waiting"
//     says how the rank waits in collectives and why, as its start line does ("spin (auto: no
//     CPU quota)"); the status page and /metrics show it beside the host. "host" and "waiting"
//     are one line of text each: at most 255 bytes, no control characters.
//     The first register of an unknown job with a "config" creates the job; later ones must
//     carry the same world and config. Without "config" a register only joins an existing job.
//     "token" is the job token when the daemon has one (compared in constant time, never
//     logged); a daemon without a token ignores it. Instead, "auth" may carry
//     "munge:<credential>" of the user running the rank, its payload munge_payload(job, rank)
//     (lib/proto/checks.h); the daemon decodes it (serve --auth munge) and the job belongs to
//     its uid. Left out when empty. A rank that registers again (a reconnect)
//     replaces its previous connection, which is closed. Until a connection has registered,
//     the daemon takes messages of at most 64 KiB.
//  2. The daemon answers `plan` with the rank's share of the plan of the job's current epoch
//     (the one running now: epoch 1's initial plan for a new job), or `error` and closes the
//     connection.
//  3. At the end of epoch E every rank sends `report`:
//       {"v":2,"type":"report","job":"J","rank":R,"epoch":E,"batch":b,"samples":n,"steps":s,
//        "compute_s":c,"comm_s":m,"step_rate_median":r}
//  4. When every rank of the job has reported epoch E, or --report-timeout seconds after the
//     first report of E (missing ranks are then planned from their last report, and the plan's
//     reason says so), the daemon makes the plan of epoch E+1, appends it to its journal, syncs
//     the journal, and only then sends each connected rank of the job its share of the plan:
//       {"v":2,"type":"plan","job":"J","epoch":E+1,"world":W,"global_batch":B,
//        "predicted_epoch_s":p,"ideal_epoch_s":i,"changed":true,"reason":"...",
//        "hash":"16 hex digits","rank":R,"batch":b_R,"offset":o_R,"throughput":v_R}
//     Only rank R's batch size, offset and throughput are in its message (O(1) bytes, not
//     O(W)); "hash" is proto::plan_hash of the whole plan. The ranks then allgather a 32-byte
//     share each (b_i, o_i, v_i, the hash, a hash of the fields all ranks receive alike),
//     rebuild the whole plan from the shares and use it only if every rank holds a share of the
//     same plan and the rebuilt plan has that hash (lib/proto/share.h); else they all fall back
//     to their embedded policy for the epoch.
//     A report of an epoch that is already planned is answered with the plan made from it (a
//     rank that reconnected resends its report). A report of a later epoch than the daemon
//     expects means the agents ran epochs on their embedded policy: the daemon moves on to it.
//  5. Once registered, either side may send {"v":2,"type":"heartbeat"}; the daemon answers with
//     one. A heartbeat before register is refused (state): a connection must register within
//     --hello-timeout of connecting, whatever it sends meanwhile.
//     Agents send one when they have been quiet for a while, so idle limits do not drop them.
//  6. The agent ends with {"v":2,"type":"goodbye","done":true} (done: the job finished); the
//     daemon answers goodbye and closes. A job whose ranks all said done is finished; one
//     whose agents were stopped by a signal says done false and is shown stopped until a rank
//     registers again (the job resumed).
//  Any violation is answered with {"v":2,"type":"error","code":"C","message":"M"} and the
//  connection is closed; other connections do not notice. Codes are the names of ErrorCode.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "lib/common/error.h"

namespace dbs::proto {

inline constexpr int kVersion = 2;
inline constexpr std::size_t kMaxMessage = 1 << 20;  // bytes per line, newline excluded
inline constexpr int kMaxWorld = 1000000;            // ranks per job
inline constexpr std::size_t kMaxJobId = 64;         // characters of a job id

enum class ErrorCode {
  malformed,     // not JSON, or not an object
  invalid,       // a field is missing, of the wrong type or out of range
  version,       // wrong protocol version
  unknown_type,  // unknown message type
  too_long,      // line longer than the limit
  auth,          // token or munge credential missing or wrong, or the job is another user's
  unknown_job,   // job not known to the daemon
  conflict,      // register does not match the job
  state,         // message not allowed now (report before register, stale epoch, ...)
  timeout,       // idle or unfinished line for too long
  limit,         // too many connections or jobs
  shutdown,      // the daemon is stopping
};

const char* name(ErrorCode code);

// A message that breaks the protocol. what() is the exact message sent to the peer.
class ProtocolError : public InputError {
 public:
  ProtocolError(ErrorCode code, const std::string& message) : InputError(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace dbs::proto
