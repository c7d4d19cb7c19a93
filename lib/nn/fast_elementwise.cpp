// Fast versions of the cheap kernels: the reference loops, run in parallel over samples or
// element ranges with TBB. Each output element is computed exactly as in the reference.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_reduce.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "lib/nn/kernels.h"

namespace dbs::nn::DBS_NN_FAST_NS {
namespace {
constexpr std::size_t kGrain = 8192;  // elements per task for elementwise loops

template <typename F>
void for_range(std::size_t count, F&& f) {
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, count, kGrain),
                    [&](const tbb::blocked_range<std::size_t>& r) { f(r.begin(), r.end()); });
}
}  // namespace

// x is (n, c, h, w), y and arg are (n, c, h/k, w/k). The window is scanned in row-major order
// and only a strictly greater value replaces the maximum, as in the reference; planes (n * c)
// run in parallel.
void maxpool_forward(const PoolShape& s, const float* x, float* y, std::int32_t* arg) {
  const PoolShape one{1, 1, s.h, s.w, s.k};
  const std::size_t in_plane = static_cast<std::size_t>(s.h) * s.w;
  const std::size_t out_plane = static_cast<std::size_t>(s.h_out()) * s.w_out();
  tbb::parallel_for(
      tbb::blocked_range<int>(0, s.n * s.c, 16), [&](const tbb::blocked_range<int>& r) {
        for (int p = r.begin(); p != r.end(); ++p) {
          ref::maxpool_forward(one, x + p * in_plane, y + p * out_plane, arg + p * out_plane);
          for (std::size_t o = p * out_plane; o < (p + 1) * out_plane; ++o)
            arg[o] += static_cast<std::int32_t>(p * in_plane);  // plane-local -> batch index
        }
      });
}

// dy and arg are (n, c, h/k, w/k); dx is (n, c, h, w).
void maxpool_backward(const PoolShape& s, const float* dy, const std::int32_t* arg, float* dx) {
  const std::size_t in_plane = static_cast<std::size_t>(s.h) * s.w;
  const std::size_t out_plane = static_cast<std::size_t>(s.h_out()) * s.w_out();
  tbb::parallel_for(0, s.n * s.c, [&](int plane) {
    std::memset(dx + plane * in_plane, 0, sizeof(float) * in_plane);
    for (std::size_t o = plane * out_plane; o < (plane + 1) * out_plane; ++o) dx[arg[o]] += dy[o];
  });
}

void relu_forward(std::size_t count, const float* x, float* y) {
  for_range(count, [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
  });
}

void relu_backward(std::size_t count, const float* y, const float* dy, float* dx) {
  for_range(count, [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i)
      dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;  // vectorises to a blend
  });
}

// x, y and mask are (n, per_sample).
void dropout_forward(int n, std::size_t per_sample, float rate, const DropoutKey& key,
                     const std::int64_t* sample_ids, const float* x, float* y, float* mask) {
  const float keep_scale = rate < 1.0f ? 1.0f / (1.0f - rate) : 0.0f;
  tbb::parallel_for(0, n, [&](int s) {
    const std::size_t base = static_cast<std::size_t>(s) * per_sample;
    for (std::size_t j = 0; j < per_sample; ++j) {
      const float m = dropout_uniform(key, sample_ids[s], j) < rate ? 0.0f : keep_scale;
      mask[base + j] = m;
      y[base + j] = x[base + j] * m;
    }
  });
}

void dropout_backward(std::size_t count, const float* mask, const float* dy, float* dx) {
  for_range(count, [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) dx[i] = dy[i] * mask[i];
  });
}

// logits and dlogits are (n, classes), labels is (n). Per-row losses are summed in row order.
double softmax_xent(int n, int classes, const float* logits, const std::int32_t* labels,
                    float* dlogits, int* correct) {
  std::vector<double> row_loss(static_cast<std::size_t>(n));
  std::vector<char> row_hit(static_cast<std::size_t>(n));
  tbb::parallel_for(0, n, [&](int r) {
    const float* z = logits + static_cast<std::size_t>(r) * classes;
    int best = 0;
    for (int j = 1; j < classes; ++j)
      if (z[j] > z[best]) best = j;
    const double zmax = z[best];
    double sum = 0.0;
    for (int j = 0; j < classes; ++j) sum += std::exp(static_cast<double>(z[j]) - zmax);
    row_loss[r] = std::log(sum) + zmax - static_cast<double>(z[labels[r]]);
    row_hit[r] = best == labels[r];
    if (dlogits != nullptr) {
      float* d = dlogits + static_cast<std::size_t>(r) * classes;
      for (int j = 0; j < classes; ++j)
        d[j] = static_cast<float>(std::exp(static_cast<double>(z[j]) - zmax) / sum);
      d[labels[r]] -= 1.0f;
    }
  });
  double total = 0.0;
  int hits = 0;
  for (int r = 0; r < n; ++r) {
    total += row_loss[r];
    hits += row_hit[r];
  }
  if (correct != nullptr) *correct = hits;
  return total;
}

}  // namespace dbs::nn::DBS_NN_FAST_NS
