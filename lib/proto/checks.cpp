#include "lib/proto/checks.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "lib/proto/codec.h"
#include "lib/proto/protocol.h"
#include "lib/proto/share.h"

namespace dbs::proto {
namespace {

std::string number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  std::string s = buf;
  // The shortest form that reads back the same, for messages that quote the value.
  for (int digits = 1; digits < 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, x);
    if (std::strtod(buf, nullptr) == x) return buf;
  }
  return s;
}

void count(const char* field, std::int64_t x, std::int64_t lo, std::int64_t hi) {
  if (x < lo || x > hi)
    throw ProtocolError(ErrorCode::invalid, std::string("field '") + field +
                                                "' must be an integer in [" + std::to_string(lo) +
                                                ", " + std::to_string(hi) + "], got " +
                                                std::to_string(x));
}

void figure(const char* field, double x) {
  if (x == 0 || (x >= kMinFigure && x <= kMaxFigure)) return;
  throw ProtocolError(ErrorCode::invalid, std::string("field '") + field +
                                              "' must be 0 or a number in [" + number(kMinFigure) +
                                              ", " + number(kMaxFigure) + "], got " + number(x));
}

}  // namespace

void check_bounds(const Report& r) {
  count("epoch", r.epoch + 1, 1, kMaxEpoch);
  count("samples", r.samples, 0, kMaxSamples);
  count("steps", r.steps, 0, kMaxSamples);
  figure("compute_s", r.compute_s);
  figure("comm_s", r.comm_s);
  figure("step_rate_median", r.step_rate_median);
}

void check_bounds(const PlanMsg& p) {
  count("epoch", p.epoch + 1, 1, kMaxEpoch + 1);
}

void check_bounds(const Settings& c) {
  count("samples_per_epoch", c.samples_per_epoch, 0, kMaxSamples);
}

std::string plan_refusal(const Plan& plan, std::int64_t epoch, int world, const Settings& config) {
  try {
    if (plan.world() != world || plan.offset.size() != plan.batch.size())
      return "plan has " + std::to_string(plan.world()) + " ranks, the job has " +
             std::to_string(world);
    // What is sent: one share per rank, all alike up to the rank's own rank, batch, offset and
    // throughput (PlanLines). Rank 0's share is decoded and must read back as what was encoded,
    // the fields all ranks share included. Another rank's share differs only in those four
    // numbers, which read back exactly when decode accepts them, so it is decoded only when
    // they fall outside decode's bounds (share_decodes), to refuse it in decode's words. Then
    // the shares assemble into `plan` itself, which plan_mismatch checks.
    const PlanLines lines("j", plan);
    for (int r = 0; r < world; ++r) {
      if (r > 0 && share_decodes(plan, r)) continue;
      const std::string line = lines.line(r);
      const Message m = decode(std::string_view(line).substr(0, line.size() - 1));
      const auto* p = std::get_if<PlanMsg>(&m);
      if (p == nullptr) return "rank " + std::to_string(r) + "'s share is not a plan message";
      if (p->rank != r) return "rank " + std::to_string(r) + "'s share names another rank";
      if (share_of(*p) != share_of(share_of(p->job, plan, r, lines.hash())))
        return "the shares do not assemble: rank " + std::to_string(r) +
               "'s share does not read back as the plan";
    }
    return plan_mismatch(plan, epoch, world, config);
  } catch (const ProtocolError& e) {
    return e.what();
  }
}

bool share_decodes(const Plan& plan, int rank) {
  const auto i = static_cast<std::size_t>(rank);
  const int b = plan.batch[i], o = plan.offset[i];
  const double v = i < plan.throughput.size() ? plan.throughput[i] : 0.0;
  return b >= 0 && b <= plan.global_batch && o >= 0 && o <= plan.global_batch - b &&
         std::isfinite(v) && v >= 0;
}

void check_rank(int rank, int world) {
  if (rank < 0 || rank >= world)
    throw ProtocolError(ErrorCode::invalid, "rank " + std::to_string(rank) +
                                                " out of range for a job of " +
                                                std::to_string(world) + " ranks");
}

void check_join(const std::string& job, int world, const Settings& config, const RegisterMsg& r) {
  if (r.world != world)
    throw ProtocolError(ErrorCode::conflict, "job '" + job + "' has " + std::to_string(world) +
                                                 " ranks, not " + std::to_string(r.world));
  if (r.config && *r.config != config)
    throw ProtocolError(ErrorCode::conflict, "job '" + job + "' runs with config " +
                                                 policy::to_json(config).dump() + ", not " +
                                                 policy::to_json(*r.config).dump());
}

std::string plan_mismatch(const Plan& plan, std::int64_t epoch, int world, const Settings& config) {
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
  if (plan.offset != offsets_of(plan.batch))
    return "plan offsets do not follow from its batch sizes";
  return "";
}

std::string munge_payload(const std::string& job, int rank) {
  return "dbs-register v" + std::to_string(kVersion) + " job=" + job +
         " rank=" + std::to_string(rank);
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
