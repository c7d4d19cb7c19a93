#include "lib/comm/local.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "lib/common/error.h"

namespace {

using dbs::CommError;
using dbs::comm::Communicator;
using dbs::comm::LocalGroup;

// Rank r's i-th value: distinct per rank and element, not exactly representable sums.
template <typename T>
T value(int rank, std::size_t i) {
  return static_cast<T>(0.1) * static_cast<T>(rank + 1) + static_cast<T>(i) / static_cast<T>(7);
}

template <typename T>
void check_allreduce(int size) {
  constexpr std::size_t n = 1000;
  std::vector<std::vector<T>> results(static_cast<std::size_t>(size));
  LocalGroup::run(size, [&](Communicator& c) {
    std::vector<T> data(n);
    for (std::size_t i = 0; i < n; ++i) data[i] = value<T>(c.rank(), i);
    c.allreduce_sum(data);
    results[static_cast<std::size_t>(c.rank())] = data;
  });
  for (std::size_t i = 0; i < n; ++i) {
    T expected = value<T>(0, i);  // rank order, so bit-exact
    for (int r = 1; r < size; ++r) expected += value<T>(r, i);
    for (const auto& result : results) REQUIRE(result[i] == expected);
  }
}

}  // namespace

TEST_CASE("Local.Allreduce.Float.SumsInRankOrder") {
  for (int size = 1; size <= 4; ++size) {
    CAPTURE(size);
    check_allreduce<float>(size);
  }
}

TEST_CASE("Local.Allreduce.Double.SumsInRankOrder") {
  for (int size = 1; size <= 4; ++size) {
    CAPTURE(size);
    check_allreduce<double>(size);
  }
}

TEST_CASE("Local.Allreduce.RepeatedRunsAreBitIdentical") {
  auto once = [] {
    std::vector<float> out;
    LocalGroup::run(3, [&](Communicator& c) {
      std::vector<float> data(257);
      for (std::size_t i = 0; i < data.size(); ++i)
        data[i] = 1e7f / static_cast<float>(i + 1 + 13 * static_cast<std::size_t>(c.rank()));
      for (int k = 0; k < 5; ++k) c.allreduce_sum(data);  // many collectives in a row
      if (c.rank() == 2) out = data;
    });
    return out;
  };
  const std::vector<float> a = once();
  const std::vector<float> b = once();
  REQUIRE(a.size() == b.size());
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

TEST_CASE("Local.Allreduce.Empty") {
  LocalGroup::run(3, [](Communicator& c) {
    std::vector<double> none;
    c.allreduce_sum(none);
    c.barrier();
  });
}

TEST_CASE("Local.Allgather.PlacesRankRAtRTimesBytes") {
  for (int size = 1; size <= 4; ++size) {
    CAPTURE(size);
    LocalGroup::run(size, [size](Communicator& c) {
      const int mine[2] = {c.rank(), 100 + c.rank()};
      std::vector<int> all(2 * static_cast<std::size_t>(size), -1);
      c.allgather_bytes(mine, sizeof(mine), all.data());
      for (int r = 0; r < size; ++r) {
        CHECK(all[2 * static_cast<std::size_t>(r)] == r);
        CHECK(all[2 * static_cast<std::size_t>(r) + 1] == 100 + r);
      }
    });
  }
}

TEST_CASE("Local.Broadcast.CopiesRootToAll") {
  for (int root = 0; root < 4; ++root) {
    CAPTURE(root);
    LocalGroup::run(4, [root](Communicator& c) {
      std::string text = "rank " + std::to_string(c.rank()) + " says hi";  // same length
      c.broadcast_bytes(text.data(), text.size(), root);
      CHECK(text == "rank " + std::to_string(root) + " says hi");
    });
  }
}

TEST_CASE("Local.Barrier.NoRankPassesBeforeAllArrive") {
  std::atomic<int> arrived{0};
  LocalGroup::run(4, [&](Communicator& c) {
    for (int round = 1; round <= 20; ++round) {
      arrived.fetch_add(1);
      c.barrier();
      CHECK(arrived.load() >= 4 * round);
      c.barrier();  // nobody starts the next round before all have checked
    }
  });
}

TEST_CASE("Local.At.ManualThreads") {
  LocalGroup group(2);
  CHECK(group.size() == 2);
  CHECK(group.at(1).rank() == 1);
  CHECK(group.at(0).size() == 2);
  CHECK_FALSE(group.at(0).host().empty());
  CHECK_THROWS_AS(LocalGroup(0), dbs::CheckError);
}

TEST_CASE("Local.Allreduce.LengthMismatchThrowsOnEveryRank") {
  std::atomic<int> threw{0};
  CHECK_THROWS_AS(LocalGroup::run(3,
                                  [&](Communicator& c) {
                                    std::vector<float> data(c.rank() == 1 ? 5 : 4);
                                    try {
                                      c.allreduce_sum(data);
                                    } catch (const dbs::CheckError&) {
                                      threw.fetch_add(1);
                                      throw;
                                    }
                                  }),
                  dbs::CheckError);
  CHECK(threw.load() == 3);
}

TEST_CASE("Local.Abort.WakesBlockedRanks") {
  const auto start = std::chrono::steady_clock::now();
  std::atomic<int> comm_errors{0};
  CHECK_THROWS_WITH_AS(LocalGroup::run(4,
                                       [&](Communicator& c) {
                                         std::vector<float> data(16, 1.0f);
                                         if (c.rank() == 2)
                                           throw std::runtime_error("rank 2 failed");
                                         try {
                                           c.allreduce_sum(data);  // blocks: rank 2 never arrives
                                         } catch (const CommError& e) {
                                           CHECK(std::string(e.what()) == "aborted by rank 2");
                                           comm_errors.fetch_add(1);
                                           throw;
                                         }
                                       }),
                       "rank 2 failed", std::runtime_error);
  CHECK(comm_errors.load() == 3);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(500));
}

TEST_CASE("Local.Abort.ExplicitAbortFailsPendingAndLaterCollectives") {
  std::atomic<int> comm_errors{0};
  CHECK_THROWS_WITH_AS(LocalGroup::run(3,
                                       [&](Communicator& c) {
                                         if (c.rank() == 0) {
                                           c.abort(3);  // returns for the local group
                                           CHECK_THROWS_AS(c.barrier(), CommError);
                                           return;
                                         }
                                         try {
                                           c.barrier();
                                         } catch (const CommError&) {
                                           comm_errors.fetch_add(1);
                                         }
                                       }),
                       "aborted by rank 0", CommError);
  CHECK(comm_errors.load() == 2);
}

// reduce_scatter_sum then allgather_segments is allreduce_sum, bit for bit (both sum in rank
// order), for even, uneven and empty segments; each rank's segment is its sum right after the
// reduce-scatter.
TEST_CASE("Local.ReduceScatterThenAllgather.IsTheAllreduce") {
  const std::vector<std::vector<std::size_t>> splits = {{1000}, {500, 500}, {999, 1}, {0, 1000},
                                                        {300, 0, 700}, {250, 250, 250, 250}};
  for (const auto& counts : splits) {
    const int size = static_cast<int>(counts.size());
    CAPTURE(size);
    LocalGroup::run(size, [&](Communicator& c) {
      std::vector<float> data(1000), reference(1000);
      for (std::size_t i = 0; i < data.size(); ++i) data[i] = reference[i] = value<float>(c.rank(), i);
      c.allreduce_sum(reference);
      c.reduce_scatter_sum(data, counts);
      std::size_t begin = 0;
      for (int r = 0; r < c.rank(); ++r) begin += counts[static_cast<std::size_t>(r)];
      for (std::size_t i = begin; i < begin + counts[static_cast<std::size_t>(c.rank())]; ++i)
        REQUIRE(data[i] == reference[i]);
      c.allgather_segments(data, counts);
      REQUIRE(data == reference);
    });
  }
}

TEST_CASE("Local.Segments.WrongCountsAreRefused") {
  LocalGroup::run(2, [](Communicator& c) {
    std::vector<float> data(10, 1.0f);
    const std::vector<std::size_t> short_sum = {4, 5}, one = {10};
    CHECK_THROWS_WITH_AS(c.reduce_scatter_sum(data, short_sum),
                         "segments: counts sum to 9, the buffer has 10", dbs::CheckError);
    CHECK_THROWS_WITH_AS(c.allgather_segments(data, one), "segments: 1 counts for 2 ranks",
                         dbs::CheckError);
  });
}
