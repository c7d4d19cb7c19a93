// Reference kernels: plain single-threaded loops that read like the maths, the yardstick the
// fast kernels are tested against. Every reduction accumulates in double and stores float.
#include <cmath>
#include <vector>

#include "lib/common/error.h"
#include "lib/nn/kernels.h"

namespace dbs::nn::ref {
namespace {

// A float widened to double: the reference accumulates every sum in double.
double wide(float v) {
  return static_cast<double>(v);
}

// Flat index of (a, b, c, d) in a tensor of dims (·, nb, nc, nd).
std::size_t at(int a, int b, int c, int d, int nb, int nc, int nd) {
  return ((static_cast<std::size_t>(a) * nb + b) * nc + c) * nd + d;
}

}  // namespace

void conv2d_forward(const ConvShape& s, const float* x, const float* wt, const float* b, float* y) {
  // x is (n, c_in, h, w), wt is (c_out, c_in, k, k), b is (c_out), y is (n, c_out, ho, wo).
  // y[i, o, oy, ox] = b[o] + sum over (c, ky, kx) of
  //                   wt[o, c, ky, kx] * x[i, c, oy + ky - pad, ox + kx - pad]  (0 outside)
  const int ho = s.h_out(), wo = s.w_out();
  for (int i = 0; i < s.n; ++i)
    for (int o = 0; o < s.c_out; ++o)
      for (int oy = 0; oy < ho; ++oy)
        for (int ox = 0; ox < wo; ++ox) {
          double acc = b[o];
          for (int c = 0; c < s.c_in; ++c)
            for (int ky = 0; ky < s.k; ++ky)
              for (int kx = 0; kx < s.k; ++kx) {
                const int iy = oy - s.pad + ky, ix = ox - s.pad + kx;
                if (iy < 0 || iy >= s.h || ix < 0 || ix >= s.w) continue;  // zero padding
                acc += wide(wt[at(o, c, ky, kx, s.c_in, s.k, s.k)]) *
                       wide(x[at(i, c, iy, ix, s.c_in, s.h, s.w)]);
              }
          y[at(i, o, oy, ox, s.c_out, ho, wo)] = static_cast<float>(acc);
        }
}

void conv2d_backward(const ConvShape& s, const float* x, const float* wt, const float* dy,
                     float* dx, float* dw, float* db) {
  // dy is (n, c_out, ho, wo); dx (nullable) is (n, c_in, h, w); dw is (c_out, c_in, k, k);
  // db is (c_out). Each output is written as a gather (one sum per element).
  const int ho = s.h_out(), wo = s.w_out();
  for (int o = 0; o < s.c_out; ++o) {
    double acc = 0;
    for (int i = 0; i < s.n; ++i)
      for (int oy = 0; oy < ho; ++oy)
        for (int ox = 0; ox < wo; ++ox) acc += wide(dy[at(i, o, oy, ox, s.c_out, ho, wo)]);
    db[o] = static_cast<float>(acc);
  }
  for (int o = 0; o < s.c_out; ++o)
    for (int c = 0; c < s.c_in; ++c)
      for (int ky = 0; ky < s.k; ++ky)
        for (int kx = 0; kx < s.k; ++kx) {
          double acc = 0;
          for (int i = 0; i < s.n; ++i)
            for (int oy = 0; oy < ho; ++oy)
              for (int ox = 0; ox < wo; ++ox) {
                const int iy = oy - s.pad + ky, ix = ox - s.pad + kx;
                if (iy < 0 || iy >= s.h || ix < 0 || ix >= s.w) continue;
                acc += wide(dy[at(i, o, oy, ox, s.c_out, ho, wo)]) *
                       wide(x[at(i, c, iy, ix, s.c_in, s.h, s.w)]);
              }
          dw[at(o, c, ky, kx, s.c_in, s.k, s.k)] = static_cast<float>(acc);
        }
  if (dx == nullptr) return;
  // dx[i, c, iy, ix] = sum_{o, ky, kx} dy[i, o, iy + pad - ky, ix + pad - kx] * wt[o, c, ky, kx]
  for (int i = 0; i < s.n; ++i)
    for (int c = 0; c < s.c_in; ++c)
      for (int iy = 0; iy < s.h; ++iy)
        for (int ix = 0; ix < s.w; ++ix) {
          double acc = 0;
          for (int o = 0; o < s.c_out; ++o)
            for (int ky = 0; ky < s.k; ++ky)
              for (int kx = 0; kx < s.k; ++kx) {
                const int oy = iy + s.pad - ky, ox = ix + s.pad - kx;
                if (oy < 0 || oy >= ho || ox < 0 || ox >= wo) continue;
                acc += wide(dy[at(i, o, oy, ox, s.c_out, ho, wo)]) *
                       wide(wt[at(o, c, ky, kx, s.c_in, s.k, s.k)]);
              }
          dx[at(i, c, iy, ix, s.c_in, s.h, s.w)] = static_cast<float>(acc);
        }
}

void dense_forward(int n, int in, int out, const float* x, const float* wt, const float* b,
                   float* y) {
  // x is (n, in), wt is (out, in), b is (out), y is (n, out): y = x wt^T + b.
  for (int i = 0; i < n; ++i)
    for (int o = 0; o < out; ++o) {
      double acc = b[o];
      for (int j = 0; j < in; ++j)
        acc += wide(x[static_cast<std::size_t>(i) * in + j]) *
               wide(wt[static_cast<std::size_t>(o) * in + j]);
      y[static_cast<std::size_t>(i) * out + o] = static_cast<float>(acc);
    }
}

void dense_backward(int n, int in, int out, const float* x, const float* wt, const float* dy,
                    float* dx, float* dw, float* db) {
  // dy is (n, out); dx (nullable) is (n, in) = dy wt; dw is (out, in) = dy^T x; db is (out).
  for (int o = 0; o < out; ++o) {
    double acc_b = 0;
    for (int i = 0; i < n; ++i) acc_b += wide(dy[static_cast<std::size_t>(i) * out + o]);
    db[o] = static_cast<float>(acc_b);
    for (int j = 0; j < in; ++j) {
      double acc = 0;
      for (int i = 0; i < n; ++i)
        acc += wide(dy[static_cast<std::size_t>(i) * out + o]) *
               wide(x[static_cast<std::size_t>(i) * in + j]);
      dw[static_cast<std::size_t>(o) * in + j] = static_cast<float>(acc);
    }
  }
  if (dx == nullptr) return;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < in; ++j) {
      double acc = 0;
      for (int o = 0; o < out; ++o)
        acc += wide(dy[static_cast<std::size_t>(i) * out + o]) *
               wide(wt[static_cast<std::size_t>(o) * in + j]);
      dx[static_cast<std::size_t>(i) * in + j] = static_cast<float>(acc);
    }
}

void maxpool_forward(const PoolShape& s, const float* x, float* y, std::int32_t* arg) {
  // x is (n, c, h, w), y and arg are (n, c, h/k, w/k); windows are scanned row by row and only
  // a strictly larger value replaces the best, so ties keep the first maximum.
  const int ho = s.h_out(), wo = s.w_out();
  for (int i = 0; i < s.n; ++i)
    for (int c = 0; c < s.c; ++c)
      for (int oy = 0; oy < ho; ++oy)
        for (int ox = 0; ox < wo; ++ox) {
          std::size_t best = at(i, c, oy * s.k, ox * s.k, s.c, s.h, s.w);
          for (int ky = 0; ky < s.k; ++ky)
            for (int kx = 0; kx < s.k; ++kx) {
              const std::size_t j = at(i, c, oy * s.k + ky, ox * s.k + kx, s.c, s.h, s.w);
              if (x[j] > x[best]) best = j;
            }
          const std::size_t out = at(i, c, oy, ox, s.c, ho, wo);
          y[out] = x[best];
          arg[out] = static_cast<std::int32_t>(best);
        }
}

void maxpool_backward(const PoolShape& s, const float* dy, const std::int32_t* arg, float* dx) {
  // dy and arg are (n, c, h/k, w/k); dx is (n, c, h, w), zero except at the argmax positions.
  const std::size_t in_count = static_cast<std::size_t>(s.n) * s.c * s.h * s.w;
  const std::size_t out_count = static_cast<std::size_t>(s.n) * s.c * s.h_out() * s.w_out();
  for (std::size_t j = 0; j < in_count; ++j) dx[j] = 0.0f;
  for (std::size_t j = 0; j < out_count; ++j) dx[arg[j]] += dy[j];
}

void relu_forward(std::size_t count, const float* x, float* y) {
  // x and y are (count); y may alias x.
  for (std::size_t j = 0; j < count; ++j) y[j] = x[j] > 0.0f ? x[j] : 0.0f;
}

void relu_backward(std::size_t count, const float* y, const float* dy, float* dx) {
  // y, dy and dx are (count); dx may alias dy.
  for (std::size_t j = 0; j < count; ++j) dx[j] = y[j] > 0.0f ? dy[j] : 0.0f;
}

void dropout_forward(int n, std::size_t per_sample, float rate, const DropoutKey& key,
                     const std::int64_t* sample_ids, const float* x, float* y, float* mask) {
  // x, y and mask are (n, per_sample); mask[i, e] depends only on (key, sample_ids[i], e).
  DBS_CHECK(rate >= 0.0f && rate < 1.0f);
  const float keep_scale = 1.0f / (1.0f - rate);
  for (int i = 0; i < n; ++i)
    for (std::size_t e = 0; e < per_sample; ++e) {
      const std::size_t j = static_cast<std::size_t>(i) * per_sample + e;
      const float m = dropout_uniform(key, sample_ids[i], e) < rate ? 0.0f : keep_scale;
      mask[j] = m;
      y[j] = x[j] * m;
    }
}

void dropout_backward(std::size_t count, const float* mask, const float* dy, float* dx) {
  // mask, dy and dx are (count); dx may alias dy.
  for (std::size_t j = 0; j < count; ++j) dx[j] = dy[j] * mask[j];
}

double softmax_xent(int n, int classes, const float* logits, const std::int32_t* labels,
                    float* dlogits, int* correct) {
  // logits and dlogits are (n, classes), labels is (n). Per row, with m the row max:
  // loss = m + log(sum_c exp(l_c - m)) - l_label; dlogits = softmax - onehot(label).
  double total = 0;
  int right = 0;
  std::vector<double> e(static_cast<std::size_t>(classes));
  for (int i = 0; i < n; ++i) {
    const float* l = logits + static_cast<std::size_t>(i) * classes;
    const int label = labels[i];
    DBS_CHECK(label >= 0 && label < classes);
    int best = 0;
    for (int c = 1; c < classes; ++c)
      if (l[c] > l[best]) best = c;
    const double m = l[best];
    double sum = 0;
    for (int c = 0; c < classes; ++c) {
      e[static_cast<std::size_t>(c)] = std::exp(wide(l[c]) - m);
      sum += e[static_cast<std::size_t>(c)];
    }
    total += m + std::log(sum) - wide(l[label]);
    if (best == label) ++right;
    if (dlogits != nullptr) {
      float* d = dlogits + static_cast<std::size_t>(i) * classes;
      for (int c = 0; c < classes; ++c)
        d[c] = static_cast<float>(e[static_cast<std::size_t>(c)] / sum - (c == label ? 1.0 : 0.0));
    }
  }
  if (correct != nullptr) *correct = right;
  return total;
}

}  // namespace dbs::nn::ref
