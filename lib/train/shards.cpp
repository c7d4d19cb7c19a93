// The sharded optimizer update's slices and the gathering of its optimizer state (state.h).
#include <numeric>

#include "lib/common/error.h"
#include "lib/train/state.h"

namespace dbs::train::detail {

std::vector<std::size_t> shard_counts(std::span<const int> batch, std::size_t params) {
  const std::uint64_t total = static_cast<std::uint64_t>(std::accumulate(batch.begin(), batch.end(), 0));
  DBS_CHECK(total > 0);
  std::vector<std::size_t> counts;
  std::uint64_t cum = 0, at = 0;  // samples before rank i + 1; its slice's end
  for (const int b : batch) {
    cum += static_cast<std::uint64_t>(b);
    const std::uint64_t end = params * cum / total;  // < 2^63: params and the batch are < 2^31
    counts.push_back(static_cast<std::size_t>(end - at));
    at = end;
  }
  return counts;
}

std::size_t shard_begin(std::span<const std::size_t> counts, int rank) {
  return std::accumulate(counts.begin(), counts.begin() + rank, std::size_t{0});
}

void gather_optimizer_state(State& st) {
  if (st.shards.empty()) return;
  for (const std::span<float> v : st.optimizer->state_vectors())
    st.comm.allgather_segments(v, st.shards);
  st.shards.clear();
}

}  // namespace dbs::train::detail
