// Fisher-Yates over a splitmix64 stream.
//   key     - 64-bit stream identity, a hash of (seed, epoch);
//   counter - index of the next draw; draw k is mix(key + k * kSplitmixGamma), so any draw is a
//   pure
//             function of (seed, epoch, k) and no state crosses epochs.
// Bounded draws use rejection: a 64-bit word x is accepted when x >= 2^64 mod bound, which
// leaves a multiple of bound equally likely values, so x % bound is exactly uniform.
#include "lib/data/sampler.h"

#include <sys/resource.h>
#include <unistd.h>

#include <future>
#include <numeric>
#include <utility>

#include "lib/common/hash.h"

namespace dbs::data {
namespace {

constexpr std::uint64_t kEpochSalt = 0xd1b54a32d192ed03ULL;  // separates epoch from seed

class CounterRng {
 public:
  explicit CounterRng(std::uint64_t key) : key_(key) {}

  std::uint64_t next() { return mix64(key_ + (++counter_) * kSplitmixGamma); }

  // Uniform in [0, bound); bound > 0. 2^64 mod bound is below bound, so a word of at least
  // bound (nearly every one) is accepted without that division.
  std::uint64_t below(std::uint64_t bound) {
    for (;;) {
      const std::uint64_t x = next();
      if (x >= bound || x >= (0 - bound) % bound) return x % bound;
    }
  }

 private:
  std::uint64_t key_;
  std::uint64_t counter_ = 0;
};

}  // namespace

std::vector<std::int64_t> EpochSampler::permutation(std::uint64_t epoch) const {
  std::vector<std::int64_t> perm;
  permutation(epoch, perm);
  return perm;
}

void EpochSampler::permutation(std::uint64_t epoch, std::vector<std::int64_t>& perm) const {
  perm.resize(n_);
  std::iota(perm.begin(), perm.end(), std::int64_t{0});
  CounterRng rng(mix64(seed_ ^ mix64(epoch + kEpochSalt)));
  for (std::size_t i = n_; i > 1; --i) {
    const auto j = static_cast<std::size_t>(rng.below(i));
    std::swap(perm[i - 1], perm[j]);
  }
}

PermutationsAhead::~PermutationsAhead() {
  if (next_.valid()) next_.wait();
}

const std::vector<std::int64_t>& PermutationsAhead::at(std::uint64_t epoch) {
  if (next_.valid()) {
    // get() waits for the shuffle and rethrows what it threw; one of another epoch (a run that
    // skipped epochs) is dropped.
    std::vector<std::int64_t> next = next_.get();
    if (next_epoch_ == epoch) {
      std::swap(current_, next);
      current_epoch_ = epoch;
    }
    spare_ = std::move(next);
  }
  if (current_epoch_ != epoch) {
    sampler_.permutation(epoch, current_);
    current_epoch_ = epoch;
  }
  return current_;
}

void PermutationsAhead::ahead(std::uint64_t epoch) {
  if (next_.valid() && next_epoch_ == epoch) return;
  if (next_.valid()) next_.wait();
  next_epoch_ = epoch;
  next_ = std::async(std::launch::async,
                     [sampler = sampler_, epoch, perm = std::move(spare_)]() mutable {
                       // At the lowest priority: the shuffle takes cores the rank's own threads
                       // leave idle (or those of other processes on an oversubscribed host), not
                       // theirs.
                       setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 19);
                       sampler.permutation(epoch, perm);
                       return std::move(perm);
                     });
}

}  // namespace dbs::data
