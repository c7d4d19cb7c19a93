// <dbs/steps.h>: the step rule (step_batch), the epoch permutation and the Sampler of a rank's
// samples; and median_rate (lib/policy/steps.h).
#include "lib/policy/steps.h"

#include <algorithm>
#include <string>

#include "lib/common/error.h"
#include "lib/data/sampler.h"
#include "lib/policy/policy.h"

namespace dbs {

std::vector<int> step_batch(const Plan& plan, int samples) {
  if (samples == plan.global_batch) return plan.batch;
  return policy::apportion(std::vector<double>(plan.batch.begin(), plan.batch.end()), samples, 0,
                           samples);
}

std::vector<std::int64_t> permutation(std::int64_t samples, std::uint64_t seed,
                                      std::int64_t epoch) {
  if (samples < 0) throw InputError("permutation of " + std::to_string(samples) + " samples");
  if (epoch < 0) throw InputError("permutation of epoch " + std::to_string(epoch));
  return data::EpochSampler(static_cast<std::size_t>(samples), seed)
      .permutation(static_cast<std::uint64_t>(epoch));
}

Sampler::Sampler(std::int64_t samples, int global_batch, int world, std::uint64_t seed)
    : samples_(samples), global_batch_(global_batch), world_(world), seed_(seed) {
  if (global_batch <= 0)
    throw InputError("global batch " + std::to_string(global_batch) + ": must be at least 1");
  if (samples < global_batch)
    throw InputError("the data set has " + std::to_string(samples) +
                     " samples, fewer than the global batch " + std::to_string(global_batch));
  if (world < 1) throw InputError("world size " + std::to_string(world) + ": must be at least 1");
}

int Sampler::step_samples(std::int64_t step) const {
  if (step < 0 || step >= steps())
    throw InputError("step " + std::to_string(step) + " out of range: an epoch has " +
                     std::to_string(steps()) + " steps");
  return static_cast<int>(std::min<std::int64_t>(global_batch_, samples_ - step * global_batch_));
}

const std::vector<std::int64_t>& Sampler::permutation(std::int64_t epoch) {
  if (epoch != cached_epoch_) {
    perm_ = dbs::permutation(samples_, seed_, epoch);
    cached_epoch_ = epoch;
  }
  return perm_;
}

void Sampler::check(const Plan& plan, int rank, std::int64_t step) const {
  if (plan.world() != world_)
    throw InputError("the plan has " + std::to_string(plan.world()) + " ranks, the job has " +
                     std::to_string(world_));
  if (plan.global_batch != global_batch_)
    throw InputError("the plan has global batch " + std::to_string(plan.global_batch) +
                     ", the sampler " + std::to_string(global_batch_));
  if (rank < 0 || rank >= world_)
    throw InputError("rank " + std::to_string(rank) + " out of range for " +
                     std::to_string(world_) + " ranks");
  step_samples(step);
}

std::vector<int> Sampler::split(const Plan& plan, std::int64_t step) const {
  check(plan, 0, step);
  return step_batch(plan, step_samples(step));
}

std::vector<std::int64_t> Sampler::indices(const Plan& plan, int rank, std::int64_t step) {
  check(plan, rank, step);
  const std::vector<int> b = step_batch(plan, step_samples(step));
  std::int64_t begin = step * global_batch_;
  for (int i = 0; i < rank; ++i) begin += b[static_cast<std::size_t>(i)];
  const std::vector<std::int64_t>& perm = permutation(plan.epoch);
  const auto first = perm.begin() + static_cast<std::ptrdiff_t>(begin);
  return {first, first + b[static_cast<std::size_t>(rank)]};
}

std::vector<std::vector<std::int64_t>> Sampler::epoch_indices(const Plan& plan, int rank) {
  std::vector<std::vector<std::int64_t>> out;
  out.reserve(static_cast<std::size_t>(steps()));
  for (std::int64_t s = 0; s < steps(); ++s) out.push_back(indices(plan, rank, s));
  return out;
}

}  // namespace dbs

namespace dbs::policy {

double median_rate(std::vector<std::pair<double, std::int64_t>> rates) {
  std::sort(rates.begin(), rates.end());
  std::int64_t total = 0, seen = 0;
  for (const auto& r : rates) total += r.second;
  for (const auto& [rate, count] : rates) {
    seen += count;
    if (total / 2 < seen) return rate;
  }
  return 0.0;
}

}  // namespace dbs::policy
