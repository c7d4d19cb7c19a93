#include "lib/nn/chunking.h"

#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include <array>

namespace dbs::nn::detail {

Chunks make_chunks(int n, int rows_per_sample, int target_rows, int min_chunks) {
  Chunks c;
  c.n = n;
  if (n <= 0) return c;
  int size = std::max(1, (target_rows + rows_per_sample - 1) / std::max(1, rows_per_sample));
  const int for_parallelism = std::max(1, (n + min_chunks - 1) / min_chunks);
  c.size = std::min({size, for_parallelism, n});
  return c;
}

void reduce_partials(const float* partials, int count, std::size_t len, float* out) {
  constexpr std::size_t kGrain = 4096;
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, len, kGrain),
                    [&](const tbb::blocked_range<std::size_t>& r) {
                      for (std::size_t j = r.begin(); j != r.end(); ++j) out[j] = 0.0f;
                      for (int c = 0; c < count; ++c) {
                        const float* p = partials + static_cast<std::size_t>(c) * len;
                        for (std::size_t j = r.begin(); j != r.end(); ++j) out[j] += p[j];
                      }
                    });
}

namespace {
constexpr int kSlots = 4;
using Buffers = std::array<std::vector<float>, kSlots>;
tbb::enumerable_thread_specific<Buffers>& scratch_sets() {
  static tbb::enumerable_thread_specific<Buffers> sets;
  return sets;
}
}  // namespace

float* thread_scratch(int slot, std::size_t count) {
  std::vector<float>& buf = scratch_sets().local()[static_cast<std::size_t>(slot)];
  if (buf.size() < count) buf.resize(count);
  return buf.data();
}

float* partials_buffer(std::size_t count) {
  thread_local std::vector<float> buf;
  if (buf.size() < count) buf.resize(count);
  return buf.data();
}

}  // namespace dbs::nn::detail
