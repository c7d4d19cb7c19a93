// How the ranks turn the daemon's per-rank plan messages back into one plan (protocol version
// 2). Each rank holds only its share (PlanMsg); at the end of an epoch the ranks allgather a
// fixed-size Share each (32 bytes), and every rank rebuilds the whole plan from them. The plan
// is used only when every rank holds a share of the same plan: the same plan hash, the same
// hash of the fields every rank receives alike (`head`), and the rebuilt plan hashing to it.
// The verdict depends on the allgathered shares alone, so every rank reaches the same one.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "lib/policy/plan.h"
#include "lib/proto/messages.h"

namespace dbs::proto {

// A hash of everything in the plan (epoch, sizes, throughputs' bits, predictions, changed,
// reason); never 0.
std::uint64_t plan_hash(const Plan& plan);

// Rank `rank`'s message of `plan` (whose plan_hash is `hash`: computed once per plan, it costs
// O(world)) for job `job`.
PlanMsg share_of(const std::string& job, const Plan& plan, int rank, std::uint64_t hash);

struct Share {
  std::int32_t batch = 0, offset = 0;
  double throughput = 0;
  std::uint64_t hash = 0;  // 0: this rank holds no plan
  std::uint64_t head = 0;  // hash of the fields every rank receives alike
  bool operator==(const Share&) const = default;
};
Share share_of(const PlanMsg& message);

// The plan whose shares `all` holds (indexed by rank), the fields every rank receives alike taken
// from `mine`; nothing, with `why` set, unless all hold shares of one plan.
std::optional<Plan> assemble(const PlanMsg& mine, std::span<const Share> all, std::string& why);

}  // namespace dbs::proto
