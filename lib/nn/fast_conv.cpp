// Fast convolution: per chunk of samples, im2col + one Eigen GEMM, chunks in parallel (TBB).
//
// Words: for a chunk of ns samples, P = ns * ho * wo output positions ("rows"), K = c_in * k * k
// patch values per position. col is the (P x K) column-major patch matrix: column kk = (c, ky, kx)
// holds, for every row (s, oy, ox), the input value x[s][c][oy + ky - pad][ox + kx - pad] (or 0
// outside). The weights (c_out, c_in, k, k) row-major are the (K x c_out) column-major matrix Wt.
//   forward:   Y (P x c_out) = col * Wt, then scattered to NCHW with the bias added
//   backward:  dYm (P x c_out) gathered from dy;  dWt += col^T * dYm;  db += colsum(dYm);
//              dcol (P x K) = dYm * Wt^T, then col2im adds dcol back onto dx.
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

constexpr int kTargetRows = 768;  // GEMM rows per chunk

// x is (ns, c_in, h, w) for the chunk; col is (P x K) column-major, P = ns * ho * wo.
void im2col(const ConvShape& s, int ns, const float* x, float* col) {
  const int ho = s.h_out(), wo = s.w_out(), hw = ho * wo;
  const std::size_t P = static_cast<std::size_t>(ns) * hw;
  for (int c = 0; c < s.c_in; ++c)
    for (int ky = 0; ky < s.k; ++ky)
      for (int kx = 0; kx < s.k; ++kx) {
        float* dst = col + static_cast<std::size_t>((c * s.k + ky) * s.k + kx) * P;
        // Output columns ox whose input column ix = ox + kx - pad lies inside [0, w).
        const int ox0 = std::max(0, s.pad - kx), ox1 = std::min(wo, s.w + s.pad - kx);
        for (int n = 0; n < ns; ++n) {
          const float* src = x + (static_cast<std::size_t>(n) * s.c_in + c) * s.h * s.w;
          for (int oy = 0; oy < ho; ++oy) {
            float* d = dst + static_cast<std::size_t>(n) * hw + oy * wo;
            const int iy = oy + ky - s.pad;
            if (iy < 0 || iy >= s.h || ox0 >= ox1) {
              std::memset(d, 0, sizeof(float) * wo);
              continue;
            }
            for (int ox = 0; ox < ox0; ++ox) d[ox] = 0.0f;
            std::memcpy(d + ox0, src + iy * s.w + (ox0 + kx - s.pad), sizeof(float) * (ox1 - ox0));
            for (int ox = ox1; ox < wo; ++ox) d[ox] = 0.0f;
          }
        }
      }
}

// The adjoint of im2col: dx (ns, c_in, h, w) is overwritten with the sum of dcol's entries.
void col2im(const ConvShape& s, int ns, const float* dcol, float* dx) {
  const int ho = s.h_out(), wo = s.w_out(), hw = ho * wo;
  const std::size_t P = static_cast<std::size_t>(ns) * hw;
  std::memset(dx, 0, sizeof(float) * static_cast<std::size_t>(ns) * s.c_in * s.h * s.w);
  for (int c = 0; c < s.c_in; ++c)
    for (int ky = 0; ky < s.k; ++ky)
      for (int kx = 0; kx < s.k; ++kx) {
        const float* src = dcol + static_cast<std::size_t>((c * s.k + ky) * s.k + kx) * P;
        const int ox0 = std::max(0, s.pad - kx), ox1 = std::min(wo, s.w + s.pad - kx);
        for (int n = 0; n < ns; ++n) {
          float* dst = dx + (static_cast<std::size_t>(n) * s.c_in + c) * s.h * s.w;
          for (int oy = 0; oy < ho; ++oy) {
            const int iy = oy + ky - s.pad;
            if (iy < 0 || iy >= s.h) continue;
            const float* sr = src + static_cast<std::size_t>(n) * hw + oy * wo;
            float* dr = dst + iy * s.w + (kx - s.pad);
            for (int ox = ox0; ox < ox1; ++ox) dr[ox] += sr[ox];
          }
        }
      }
}

}  // namespace

void conv2d_forward(const ConvShape& s, const float* x, const float* wt, const float* b, float* y) {
  const int hw = s.h_out() * s.w_out();
  const int K = s.c_in * s.k * s.k;
  const detail::Chunks chunks = detail::make_chunks(s.n, hw, kTargetRows);
  const std::size_t in_per = static_cast<std::size_t>(s.c_in) * s.h * s.w;
  const std::size_t out_per = static_cast<std::size_t>(s.c_out) * hw;
  tbb::parallel_for(0, chunks.count(), [&](int ci) {
    const int n0 = chunks.begin(ci), ns = chunks.end(ci) - n0;
    const int P = ns * hw;
    float* col = detail::thread_scratch(0, static_cast<std::size_t>(P) * K);
    float* out = detail::thread_scratch(1, static_cast<std::size_t>(P) * s.c_out);
    im2col(s, ns, x + n0 * in_per, col);
    Map(out, P, s.c_out).noalias() = MapC(col, P, K) * MapC(wt, K, s.c_out);
    for (int n = 0; n < ns; ++n)
      for (int co = 0; co < s.c_out; ++co) {
        const float* src =
            out + static_cast<std::size_t>(co) * P + static_cast<std::size_t>(n) * hw;
        float* dst = y + (n0 + n) * out_per + static_cast<std::size_t>(co) * hw;
        const float bias = b[co];
        for (int p = 0; p < hw; ++p) dst[p] = src[p] + bias;
      }
  });
}

void conv2d_backward(const ConvShape& s, const float* x, const float* wt, const float* dy,
                     float* dx, float* dw, float* db) {
  const int hw = s.h_out() * s.w_out();
  const int K = s.c_in * s.k * s.k;
  const detail::Chunks chunks = detail::make_chunks(s.n, hw, kTargetRows);
  const std::size_t in_per = static_cast<std::size_t>(s.c_in) * s.h * s.w;
  const std::size_t out_per = static_cast<std::size_t>(s.c_out) * hw;
  // Per chunk: the dW partial (K * c_out) followed by the db partial (c_out).
  const std::size_t part_len = static_cast<std::size_t>(K) * s.c_out + s.c_out;
  float* partials = detail::partials_buffer(part_len * chunks.count());
  tbb::parallel_for(0, chunks.count(), [&](int ci) {
    const int n0 = chunks.begin(ci), ns = chunks.end(ci) - n0;
    const int P = ns * hw;
    float* col = detail::thread_scratch(0, static_cast<std::size_t>(P) * K);
    float* dym = detail::thread_scratch(1, static_cast<std::size_t>(P) * s.c_out);
    im2col(s, ns, x + n0 * in_per, col);
    for (int co = 0; co < s.c_out; ++co)
      for (int n = 0; n < ns; ++n)
        std::memcpy(dym + static_cast<std::size_t>(co) * P + static_cast<std::size_t>(n) * hw,
                    dy + (n0 + n) * out_per + static_cast<std::size_t>(co) * hw,
                    sizeof(float) * hw);
    float* part = partials + part_len * ci;
    const MapC dY(dym, P, s.c_out);
    Map(part, K, s.c_out).noalias() = MapC(col, P, K).transpose() * dY;
    // db by plain loops: Eigen's vectorised sums split a column by its address, which differs
    // between thread-local buffers, and the bits must not depend on the thread count.
    float* dbp = part + static_cast<std::size_t>(K) * s.c_out;
    for (int co = 0; co < s.c_out; ++co) {
      const float* col_co = dym + static_cast<std::size_t>(co) * P;
      float acc = 0.0f;
      for (int p = 0; p < P; ++p) acc += col_co[p];
      dbp[co] = acc;
    }
    if (dx != nullptr) {
      Map(col, P, K).noalias() = dY * MapC(wt, K, s.c_out).transpose();  // col now holds dcol
      col2im(s, ns, col, dx + n0 * in_per);
    }
  });
  float* sums = detail::thread_scratch(2, part_len);
  detail::reduce_partials(partials, chunks.count(), part_len, sums);
  std::memcpy(dw, sums, sizeof(float) * K * s.c_out);
  std::memcpy(db, sums + static_cast<std::size_t>(K) * s.c_out, sizeof(float) * s.c_out);
}

}  // namespace dbs::nn::DBS_NN_FAST_NS
