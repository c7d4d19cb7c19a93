// The numeric bounds of the protocol (one table, enforced by decode) and the checks that need
// more than one message: a rank against its job, a register against the job it joins, a plan
// against the job it is for, and the token comparison. Pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "lib/proto/messages.h"
#include "lib/proto/protocol.h"

namespace dbs::proto {

// Ranges of the numeric fields, chosen so that every plan computed from values within them
// stays in int64 arithmetic and finite doubles:
//   epoch (1-based)                  [1, kMaxEpoch]      plan epoch [1, kMaxEpoch + 1]
//   samples_per_epoch, samples, steps [0, kMaxSamples]
//   compute_s, comm_s (s), step_rate_median (samples/s): 0 (= none) or [kMinFigure, kMaxFigure]
// (N + B - 1) / B with N <= 1e15 and B < 2^31 cannot overflow; a rate is at least
// 1 / kMaxFigure and a time at most steps * B / rate <= 1e15 * 2^31 * 1e9, finite.
inline constexpr std::int64_t kMaxEpoch = 1'000'000;
inline constexpr std::int64_t kMaxSamples = 1'000'000'000'000'000;  // 1e15
inline constexpr double kMinFigure = 1e-9;
inline constexpr double kMaxFigure = 1e9;

// Each throws ProtocolError(invalid) naming the first field out of its range, e.g.
//   "field 'compute_s' must be 0 or a number in [1e-09, 1e+09], got 1e-320"
//   "field 'epoch' must be an integer in [1, 1000000], got 1000001"
// Reports and configs use wire epochs (report.epoch + 1); plans likewise.
void check_bounds(const Report& report);
void check_bounds(const PlanMsg& plan);
void check_bounds(const Settings& config);

// "" when the agents would accept `plan` as the plan of `epoch` (0-based) of the job: every
// rank's share (PlanLines::line) decodes, the shares assemble into one plan, and plan_mismatch
// finds nothing in it; else the first refusal, in decode's words where decode refuses a share.
// The daemon asserts this before sending a plan. O(world): one share is decoded, the others
// only where share_decodes says no.
std::string plan_refusal(const Plan& plan, std::int64_t epoch, int world, const Settings& config);

// Whether decode accepts the fields that are rank `rank`'s own in its share of `plan` (batch,
// offset, throughput), given that it accepts the fields all ranks share.
bool share_decodes(const Plan& plan, int rank);

// Throws ProtocolError(invalid): "rank 2 out of range for a job of 2 ranks".
void check_rank(int rank, int world);

// Throws ProtocolError(conflict) when a register for an existing job disagrees with it:
//   "job 'j' has 2 ranks, not 3"
//   "job 'j' runs with config {...}, not {...}"
void check_join(const std::string& job, int world, const Settings& config, const RegisterMsg& r);

// "" when plan can be the plan of `epoch` (0-based) for a job of `world` ranks with config,
// else why not, e.g. "plan is for epoch 5, expected epoch 4".
std::string plan_mismatch(const Plan& plan, std::int64_t epoch, int world, const Settings& config);

// A register's munge credential: "auth" is kMungeScheme + the credential, at most kMaxAuth
// bytes. Its payload binds it to one register: munge_payload(job, rank), so that a credential
// read off the wire cannot open another job or rank (munged itself refuses a second decode).
inline constexpr const char* kMungeScheme = "munge:";
inline constexpr std::size_t kMaxAuth = 4096;
std::string munge_payload(const std::string& job, int rank);

// Compares in time that depends only on the lengths, never on where the first difference is.
bool tokens_equal(std::string_view expected, std::string_view presented);

}  // namespace dbs::proto
