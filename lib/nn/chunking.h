// How fast kernels split a batch into chunks of samples, and the fixed-order reduction of
// per-chunk partial sums. The chunking depends only on the shapes, never on the thread count,
// so results are bit-identical whatever the number of TBB threads.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace dbs::nn::detail {

struct Chunks {
  int n = 0;     // samples in the batch
  int size = 1;  // samples per chunk (the last one may be shorter)
  int count() const { return n == 0 ? 0 : (n + size - 1) / size; }
  int begin(int i) const { return i * size; }
  int end(int i) const { return std::min(n, (i + 1) * size); }
};

// Chunks of about target_rows GEMM rows (rows_per_sample each), and at least min_chunks chunks
// when the batch allows it, so that a few threads always find work.
Chunks make_chunks(int n, int rows_per_sample, int target_rows, int min_chunks = 4);

// out[j] = sum over c in [0, count) of partials[c * len + j], summed in chunk order; parallel
// over j.
void reduce_partials(const float* partials, int count, std::size_t len, float* out);

// A per-thread scratch buffer of at least `count` floats, reused across calls. slot tells apart
// buffers that one task needs at the same time.
float* thread_scratch(int slot, std::size_t count);

// A scratch buffer owned by the calling thread for partial sums, reused across calls.
float* partials_buffer(std::size_t count);

}  // namespace dbs::nn::detail
