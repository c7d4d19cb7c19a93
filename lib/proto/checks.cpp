#include "lib/proto/checks.h"

#include "lib/proto/protocol.h"

namespace dbs::proto {

void check_rank(int rank, int world) {
  if (rank < 0 || rank >= world)
    throw ProtocolError(ErrorCode::invalid, "rank " + std::to_string(rank) +
                                                " out of range for a job of " +
                                                std::to_string(world) + " ranks");
}

void check_join(const std::string& job, int world, const policy::Settings& config,
                const RegisterMsg& r) {
  if (r.world != world)
    throw ProtocolError(ErrorCode::conflict, "job '" + job + "' has " + std::to_string(world) +
                                                 " ranks, not " + std::to_string(r.world));
  if (r.config && *r.config != config)
    throw ProtocolError(ErrorCode::conflict, "job '" + job + "' runs with config " +
                                                 policy::to_json(config).dump() + ", not " +
                                                 policy::to_json(*r.config).dump());
}

std::string plan_mismatch(const policy::Plan& plan, std::int64_t epoch, int world,
                          const policy::Settings& config) {
  const auto e1 = [](std::int64_t e) { return std::to_string(e + 1); };
  if (plan.epoch != epoch)
    return "plan is for epoch " + e1(plan.epoch) + ", expected epoch " + e1(epoch);
  if (plan.world() != world)
    return "plan has " + std::to_string(plan.world()) + " ranks, the job has " +
           std::to_string(world);
  if (plan.global_batch != config.global_batch)
    return "plan has global batch " + std::to_string(plan.global_batch) + ", the job has " +
           std::to_string(config.global_batch);
  const int hi = config.max_batch_or_global();
  for (int i = 0; i < world; ++i) {
    const int b = plan.batch[static_cast<std::size_t>(i)];
    if (b < config.min_batch || b > hi)
      return "plan gives rank " + std::to_string(i) + " batch " + std::to_string(b) +
             ", outside [" + std::to_string(config.min_batch) + ", " + std::to_string(hi) + "]";
  }
  if (plan.offset != policy::offsets_of(plan.batch))
    return "plan offsets do not follow from its batch sizes";
  return "";
}

bool tokens_equal(std::string_view expected, std::string_view presented) {
  // Walk the expected token whatever the presented length; fold length and bytes into diff.
  unsigned diff = expected.size() == presented.size() ? 0u : 1u;
  const std::size_t n = expected.size();
  for (std::size_t i = 0; i < n; ++i) {
    const auto a = static_cast<unsigned char>(expected[i]);
    const auto b = i < presented.size() ? static_cast<unsigned char>(presented[i]) : 0u;
    diff |= a ^ b;
  }
  return diff == 0 && n > 0;
}

}  // namespace dbs::proto
