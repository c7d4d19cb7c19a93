// EpochSampler: a deterministic, seed- and epoch-dependent, roughly uniform permutation.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <numeric>
#include <vector>

#include "lib/data/sampler.h"

using dbs::data::EpochSampler;

namespace {

bool is_permutation_of_range(std::vector<std::int64_t> p) {
  std::sort(p.begin(), p.end());
  std::vector<std::int64_t> expected(p.size());
  std::iota(expected.begin(), expected.end(), std::int64_t{0});
  return p == expected;
}

}  // namespace

TEST_CASE("Sampler.Permutation.IsPermutation") {
  for (const std::size_t n : {2U, 3U, 10U, 1000U, 4097U}) {
    CAPTURE(n);
    const EpochSampler s(n, 42);
    CHECK(s.size() == n);
    for (std::uint64_t epoch = 0; epoch < 5; ++epoch) {
      const auto p = s.permutation(epoch);
      CHECK(p.size() == n);
      CHECK(is_permutation_of_range(p));
    }
  }
}

TEST_CASE("Sampler.Permutation.SameForSameSeedAndEpoch") {
  const EpochSampler a(1000, 7);
  const EpochSampler b(1000, 7);
  CHECK(a.permutation(3) == b.permutation(3));
  CHECK(a.permutation(3) == a.permutation(3));
}

TEST_CASE("Sampler.Permutation.DiffersAcrossEpochsAndSeeds") {
  const EpochSampler a(1000, 7);
  const EpochSampler b(1000, 8);
  CHECK(a.permutation(0) != a.permutation(1));
  CHECK(a.permutation(1) != a.permutation(2));
  CHECK(a.permutation(0) != b.permutation(0));
  // (seed, epoch) pairs must not collide through a simple sum.
  CHECK(a.permutation(1) != b.permutation(0));
  std::vector<std::int64_t> identity(1000);
  std::iota(identity.begin(), identity.end(), std::int64_t{0});
  CHECK(a.permutation(0) != identity);
}

TEST_CASE("Sampler.Permutation.TinySizes") {
  CHECK(EpochSampler(0, 1).permutation(0).empty());
  CHECK(EpochSampler(1, 1).permutation(9) == std::vector<std::int64_t>{0});
}

TEST_CASE("Sampler.Permutation.FirstElementRoughlyUniform.n4") {
  // 40000 epochs, expected count 10000 per value, standard deviation about 87: +-500 is ~6 sigma.
  constexpr int kEpochs = 40000;
  const EpochSampler s(4, 123);
  std::array<int, 4> first{};
  std::array<int, 4> last{};
  for (std::uint64_t e = 0; e < kEpochs; ++e) {
    const auto p = s.permutation(e);
    ++first[static_cast<std::size_t>(p.front())];
    ++last[static_cast<std::size_t>(p.back())];
  }
  for (std::size_t v = 0; v < 4; ++v) {
    CAPTURE(v);
    CHECK(first[v] > kEpochs / 4 - 500);
    CHECK(first[v] < kEpochs / 4 + 500);
    CHECK(last[v] > kEpochs / 4 - 500);
    CHECK(last[v] < kEpochs / 4 + 500);
  }
}

TEST_CASE("Sampler.Permutation.AllOrdersOfThreeAppear") {
  // 6 orders over 6000 epochs: each about 1000 (sd ~29).
  const EpochSampler s(3, 5);
  std::array<int, 6> counts{};
  for (std::uint64_t e = 0; e < 6000; ++e) {
    const auto p = s.permutation(e);
    const auto code = static_cast<std::size_t>(p[0] * 2 + (p[1] > p[2] ? 1 : 0));
    ++counts[code];
  }
  for (const int c : counts) {
    CHECK(c > 800);
    CHECK(c < 1200);
  }
}

TEST_CASE("Sampler.Ahead.GivesEachEpochsPermutation") {
  const EpochSampler s(5000, 11);
  dbs::data::PermutationsAhead orders(5000, 11);
  SUBCASE("shuffled ahead, epoch after epoch") {
    CHECK(orders.at(0) == s.permutation(0));
    for (std::uint64_t e = 1; e < 4; ++e) {
      orders.ahead(e);
      orders.ahead(e);  // already being shuffled: the same one
      CHECK(orders.at(e) == s.permutation(e));
      CHECK(orders.at(e) == s.permutation(e));  // asked again: the same one
    }
  }
  SUBCASE("shuffled now where none was ahead, or another epoch's was") {
    CHECK(orders.at(2) == s.permutation(2));
    orders.ahead(3);
    CHECK(orders.at(5) == s.permutation(5));  // a run that skipped epochs 3 and 4
    orders.ahead(6);
    orders.ahead(7);  // replaces 6's
    CHECK(orders.at(6) == s.permutation(6));
    CHECK(orders.at(7) == s.permutation(7));
  }
}

TEST_CASE("Sampler.Ahead.TwoBuffersTakeTurns") {
  const EpochSampler s(5000, 11);
  dbs::data::PermutationsAhead orders(5000, 11);
  const std::int64_t* even = orders.at(0).data();
  orders.ahead(1);
  const std::int64_t* odd = orders.at(1).data();
  CHECK(odd != even);
  for (std::uint64_t e = 2; e < 6; ++e) {
    orders.ahead(e);
    const std::vector<std::int64_t>& perm = orders.at(e);
    CHECK(perm == s.permutation(e));
    CHECK(perm.data() == (e % 2 == 0 ? even : odd));  // the epoch before last's storage
  }
}
