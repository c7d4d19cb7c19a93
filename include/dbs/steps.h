// Which samples each rank trains on in each step of an epoch (docs/concepts/architecture.md, "One
// epoch"): all ranks draw the same permutation perm of [0, N) for epoch e; step s trains on the
// global batch perm[s*B, s*B + n_s) with n_s = min(B, N - s*B), and rank i takes the slice [o_i,
// o_i + b_i) of it, b = step_batch(plan, n_s), o = offsets_of(b). So the set of samples in every
// global step does not depend on the plan, and the ranks' slices of a step never overlap.
#pragma once

#include <dbs/plan.h>

#include <cstdint>
#include <vector>

namespace dbs {

// Per-rank sizes of a global step of `samples` samples under plan: plan.batch for a full step
// (samples == plan.global_batch); a short last step is split in the plan's proportions
// (largest remainder, ties to the lower rank, sum == samples).
std::vector<int> step_batch(const Plan& plan, int samples);

// The permutation of [0, samples) of `epoch` for `seed`: a pure function of the three, the same
// on every rank, every run and every platform (the one dbs-agent trains with).
std::vector<std::int64_t> permutation(std::int64_t samples, std::uint64_t seed, std::int64_t epoch);

// The steps of a job's epochs: N samples, global batch B, `world` ranks, a shuffle seed.
class Sampler {
 public:
  // Throws InputError naming the value at fault unless 0 < B <= N and world >= 1.
  Sampler(std::int64_t samples, int global_batch, int world, std::uint64_t seed);

  std::int64_t samples() const { return samples_; }
  int global_batch() const { return global_batch_; }
  int world() const { return world_; }
  // S = ceil(N / B) steps per epoch.
  std::int64_t steps() const { return (samples_ + global_batch_ - 1) / global_batch_; }
  // n_s: B, or the remainder for the short last step.
  int step_samples(std::int64_t step) const;
  // The permutation of `epoch` (kept for the epoch last asked for).
  const std::vector<std::int64_t>& permutation(std::int64_t epoch);
  // Every rank's slice size in step `step` under plan (step_batch).
  std::vector<int> split(const Plan& plan, std::int64_t step) const;
  // Rank `rank`'s sample indices in step `step` of epoch plan.epoch under plan. Throws
  // InputError for a plan of another world size or global batch, a rank or step out of range.
  std::vector<std::int64_t> indices(const Plan& plan, int rank, std::int64_t step);
  // Rank `rank`'s indices of every step of epoch plan.epoch, step by step.
  std::vector<std::vector<std::int64_t>> epoch_indices(const Plan& plan, int rank);

 private:
  void check(const Plan& plan, int rank, std::int64_t step) const;

  std::int64_t samples_;
  int global_batch_, world_;
  std::uint64_t seed_;
  std::int64_t cached_epoch_ = -1;
  std::vector<std::int64_t> perm_;
};

}  // namespace dbs
