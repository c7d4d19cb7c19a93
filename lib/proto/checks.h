// Checks that need more than one message: a rank against its job, a register against the job
// it joins, a plan against the job it is for, and the token comparison. Pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "lib/proto/messages.h"
#include "lib/proto/protocol.h"

namespace dbs::proto {

// Throws ProtocolError(invalid): "rank 2 out of range for a job of 2 ranks".
void check_rank(int rank, int world);

// Throws ProtocolError(conflict) when a register for an existing job disagrees with it:
//   "job 'j' has 2 ranks, not 3"
//   "job 'j' runs with config {...}, not {...}"
void check_join(const std::string& job, int world, const policy::Settings& config,
                const RegisterMsg& r);

// "" when plan can be the plan of `epoch` (0-based) for a job of `world` ranks with config,
// else why not, e.g. "plan is for epoch 5, expected epoch 4".
std::string plan_mismatch(const policy::Plan& plan, std::int64_t epoch, int world,
                          const policy::Settings& config);

// Compares in time that depends only on the lengths, never on where the first difference is.
bool tokens_equal(std::string_view expected, std::string_view presented);

}  // namespace dbs::proto
