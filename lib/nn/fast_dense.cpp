// Fast dense layer: chunks of samples in parallel (TBB), one Eigen GEMM per chunk.
// Column-major views: X (in x ns) is x's chunk, Wm (in x out) is the (out, in) row-major
// weights, Y (out x ns) is y's chunk.
//   forward:   Y = Wm^T * X + b
//   backward:  dWm += X * dY^T;  db += rowsum(dY);  dX = Wm * dY
#include <tbb/parallel_for.h>

#include <Eigen/Core>
#include <cstring>

#include "lib/nn/chunking.h"
#include "lib/nn/kernels.h"

namespace dbs::nn::DBS_NN_FAST_NS {
namespace {
using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
using MapC = Eigen::Map<const Mat>;
using Map = Eigen::Map<Mat>;
constexpr int kTargetRows = 32;  // samples per chunk when the batch is large
}  // namespace

void dense_forward(int n, int in, int out, const float* x, const float* wt, const float* b,
                   float* y) {
  const detail::Chunks chunks = detail::make_chunks(n, 1, kTargetRows);
  const MapC W(wt, in, out);
  const Eigen::Map<const Eigen::VectorXf> bias(b, out);
  tbb::parallel_for(0, chunks.count(), [&](int ci) {
    const int n0 = chunks.begin(ci), ns = chunks.end(ci) - n0;
    Map Y(y + static_cast<std::size_t>(n0) * out, out, ns);
    Y.noalias() = W.transpose() * MapC(x + static_cast<std::size_t>(n0) * in, in, ns);
    Y.colwise() += bias;
  });
}

void dense_backward(int n, int in, int out, const float* x, const float* wt, const float* dy,
                    float* dx, float* dw, float* db) {
  const detail::Chunks chunks = detail::make_chunks(n, 1, kTargetRows);
  const std::size_t part_len = static_cast<std::size_t>(in) * out + out;
  float* partials = detail::partials_buffer(part_len * chunks.count());
  const MapC W(wt, in, out);
  tbb::parallel_for(0, chunks.count(), [&](int ci) {
    const int n0 = chunks.begin(ci), ns = chunks.end(ci) - n0;
    const MapC X(x + static_cast<std::size_t>(n0) * in, in, ns);
    const MapC dY(dy + static_cast<std::size_t>(n0) * out, out, ns);
    float* part = partials + part_len * ci;
    Map(part, in, out).noalias() = X * dY.transpose();
    float* dbp = part + static_cast<std::size_t>(in) * out;  // plain loop: fixed summation order
    for (int o = 0; o < out; ++o) dbp[o] = 0.0f;
    for (int j = 0; j < ns; ++j)
      for (int o = 0; o < out; ++o) dbp[o] += dy[static_cast<std::size_t>(n0 + j) * out + o];
    if (dx != nullptr) Map(dx + static_cast<std::size_t>(n0) * in, in, ns).noalias() = W * dY;
  });
  float* sums = detail::thread_scratch(2, part_len);
  detail::reduce_partials(partials, chunks.count(), part_len, sums);
  std::memcpy(dw, sums, sizeof(float) * in * out);
  std::memcpy(db, sums + static_cast<std::size_t>(in) * out, sizeof(float) * out);
}

}  // namespace dbs::nn::DBS_NN_FAST_NS
