// Epoch sampler: the permutation of [0, n) used for one epoch, a pure function of
// (seed, epoch, n), identical on every rank and every run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dbs::data {

class EpochSampler {
 public:
  EpochSampler(std::size_t n, std::uint64_t seed) : n_(n), seed_(seed) {}
  std::size_t size() const { return n_; }
  // Fisher-Yates driven by a counter-based generator seeded from (seed, epoch); no std::
  // distribution objects, so the result does not depend on the standard library either.
  std::vector<std::int64_t> permutation(std::uint64_t epoch) const;

 private:
  std::size_t n_;
  std::uint64_t seed_;
};

}  // namespace dbs::data
