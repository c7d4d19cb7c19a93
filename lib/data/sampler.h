// Epoch sampler: the permutation of [0, n) used for one epoch, a pure function of
// (seed, epoch, n), identical on every rank and every run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <future>
#include <optional>
#include <vector>

namespace dbs::data {

class EpochSampler {
 public:
  EpochSampler(std::size_t n, std::uint64_t seed) : n_(n), seed_(seed) {}
  std::size_t size() const { return n_; }
  // Fisher-Yates driven by a counter-based generator seeded from (seed, epoch); no std::
  // distribution objects, so the result does not depend on the standard library either.
  std::vector<std::int64_t> permutation(std::uint64_t epoch) const;
  // The same into `out`, whose storage is reused where it is large enough.
  void permutation(std::uint64_t epoch, std::vector<std::int64_t>& out) const;

 private:
  std::size_t n_;
  std::uint64_t seed_;
};

// The permutations of consecutive epochs, the next one shuffled ahead on a thread of its own, at
// the lowest priority, while the epoch before it trains: an epoch's start then does not wait for
// a shuffle of the whole dataset, O(n) on every rank. (Where many ranks share a host's cores, the
// shuffles of the ranks that have left an epoch's end would delay the collectives of the ranks
// still in it.) Two buffers take turns: the shuffle ahead fills the one the epoch before last
// used, so no epoch allocates, frees or faults in n indices anew.
class PermutationsAhead {
 public:
  PermutationsAhead(std::size_t n, std::uint64_t seed) : sampler_(n, seed) {}
  ~PermutationsAhead();
  PermutationsAhead(const PermutationsAhead&) = delete;
  PermutationsAhead& operator=(const PermutationsAhead&) = delete;

  // epoch's permutation (the one shuffled ahead if it was epoch's, else shuffled now), valid
  // until the next call.
  const std::vector<std::int64_t>& at(std::uint64_t epoch);
  // Starts shuffling epoch's permutation on a thread of its own (unless it is being shuffled).
  void ahead(std::uint64_t epoch);

 private:
  EpochSampler sampler_;
  std::optional<std::uint64_t> current_epoch_;  // current_'s epoch; none before the first at()
  std::vector<std::int64_t> current_;
  std::vector<std::int64_t> spare_;  // the storage the next shuffle fills
  std::uint64_t next_epoch_ = 0;
  std::future<std::vector<std::int64_t>> next_;  // valid from ahead() until at() takes it
};

}  // namespace dbs::data
