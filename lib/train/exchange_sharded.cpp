#include "lib/train/exchange_sharded.h"

#include <numeric>

#include "lib/common/error.h"

namespace dbs::train {

std::vector<std::size_t> shard_counts(std::span<const int> batch, std::size_t params) {
  const std::uint64_t total =
      static_cast<std::uint64_t>(std::accumulate(batch.begin(), batch.end(), 0));
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

void Sharded::prepare(const Plan& plan) {
  const std::vector<std::size_t> counts = shard_counts(plan.batch, params());
  if (counts != shards_) gather_state();
  shards_ = counts;
}

void Sharded::reduce(std::span<float> buf) {
  comm_.allreduce_sum(buf.subspan(params()));
  comm_.reduce_scatter_sum(buf.first(params()), shards_);
}

void Sharded::update(std::span<const float> grad, double lr, double scale) {
  const std::size_t begin = shard_begin(shards_, comm_.rank());
  optimizer_.step_range(model_.params(), grad, lr, scale, begin,
                        begin + shards_[static_cast<std::size_t>(comm_.rank())]);
}

void Sharded::share() {
  comm_.allgather_segments(model_.params(), shards_);
}

void Sharded::gather_state() {
  if (shards_.empty()) return;
  for (const std::span<float> v : optimizer_.state_vectors()) comm_.allgather_segments(v, shards_);
  shards_.clear();
}

}  // namespace dbs::train
