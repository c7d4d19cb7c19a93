// The compute kernels of lib/nn, each in two versions with the same signature:
//   dbs::nn::ref::*   plain loops, single-threaded, written to be obviously right;
//   dbs::nn::fast::*  TBB-parallel (and im2col + Eigen GEMM where that wins), used for training.
//                     The fast kernels are compiled once per instruction set (fast_x86_64::*,
//                     fast_avx2::*) and fast::* calls the one chosen at start (lib/nn/simd.h).
// Layout is float32 NCHW throughout; n is the number of samples in the batch.
// Gradient outputs (dw, db, dx) are overwritten, never accumulated. Weight gradients are SUMS
// over the samples of the batch (no division by n): the caller divides by the global count.
// Fast kernels split the batch into chunks whose size depends only on the shapes, never on the
// thread count, and reduce per-chunk partial sums in a fixed order: results are bit-identical at
// any number of threads.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dbs::nn {

// Convolution, stride 1, odd square kernel k, zero padding pad (0 = valid, k/2 = same).
struct ConvShape {
  int n = 1;      // samples
  int c_in = 1;   // input channels
  int h = 1;      // input height
  int w = 1;      // input width
  int c_out = 1;  // output channels
  int k = 3;      // kernel size (odd)
  int pad = 0;    // zero padding on each side
  int h_out() const { return h + 2 * pad - k + 1; }
  int w_out() const { return w + 2 * pad - k + 1; }
};

// Max pooling with window k and stride k; the output is floor(h / k) x floor(w / k).
struct PoolShape {
  int n = 1, c = 1, h = 1, w = 1, k = 2;
  int h_out() const { return h / k; }
  int w_out() const { return w / k; }
};

// Dropout mask key: a sample's mask depends only on (seed, epoch, sample id), so it is the same
// whichever batch, rank or step the sample lands in.
struct DropoutKey {
  std::uint64_t seed = 0;
  std::uint64_t epoch = 0;
  std::uint64_t layer = 0;  // distinguishes several dropout layers in one model
};

#define DBS_NN_KERNELS                                                                            \
  /* x is (n, c_in, h, w), wt is (c_out, c_in, k, k), b is (c_out), y is (n, c_out, ho, wo). */   \
  void conv2d_forward(const ConvShape& s, const float* x, const float* wt, const float* b,        \
                      float* y);                                                                  \
  /* dy is (n, c_out, ho, wo); dx (nullable: skipped) is like x; dw like wt; db like b. */        \
  void conv2d_backward(const ConvShape& s, const float* x, const float* wt, const float* dy,      \
                       float* dx, float* dw, float* db);                                          \
  /* x is (n, in), wt is (out, in), b is (out), y is (n, out). */                                 \
  void dense_forward(int n, int in, int out, const float* x, const float* wt, const float* b,     \
                     float* y);                                                                   \
  /* dy is (n, out); dx (nullable) is (n, in); dw is (out, in); db is (out). */                   \
  void dense_backward(int n, int in, int out, const float* x, const float* wt, const float* dy,   \
                      float* dx, float* dw, float* db);                                           \
  /* x is (n, c, h, w), y is (n, c, h/k, w/k); arg (same size as y) gets the flat index into */   \
  /* x of each maximum (first one on ties). */                                                    \
  void maxpool_forward(const PoolShape& s, const float* x, float* y, std::int32_t* arg);          \
  /* dy is like y; dx (like x) is overwritten: zero except at the argmax positions. */            \
  void maxpool_backward(const PoolShape& s, const float* dy, const std::int32_t* arg, float* dx); \
  /* y = max(x, 0) over count elements (y may alias x). */                                        \
  void relu_forward(std::size_t count, const float* x, float* y);                                 \
  /* dx = dy where y > 0, else 0 (dx may alias dy). */                                            \
  void relu_backward(std::size_t count, const float* y, const float* dy, float* dx);              \
  /* Inverted dropout over n samples of per_sample values each: y = x * mask, mask is 0 with */   \
  /* probability rate and 1/(1-rate) otherwise, drawn from (key, sample_ids[i], element). */      \
  void dropout_forward(int n, std::size_t per_sample, float rate, const DropoutKey& key,          \
                       const std::int64_t* sample_ids, const float* x, float* y, float* mask);    \
  /* dx = dy * mask (dx may alias dy). */                                                         \
  void dropout_backward(std::size_t count, const float* mask, const float* dy, float* dx);        \
  /* Softmax cross-entropy over n rows of `classes` logits. Returns the SUM of the losses;   */   \
  /* dlogits (nullable) = softmax - onehot(label), not divided by n. correct (nullable) gets */   \
  /* the number of rows whose argmax equals the label. */                                         \
  double softmax_xent(int n, int classes, const float* logits, const std::int32_t* labels,        \
                      float* dlogits, int* correct);

namespace ref {
DBS_NN_KERNELS
}  // namespace ref

namespace fast {
DBS_NN_KERNELS
}  // namespace fast

namespace fast_x86_64 {  // baseline x86-64 (or -march=native with -Dnative=true)
DBS_NN_KERNELS
}  // namespace fast_x86_64

namespace fast_avx2 {  // AVX2 + FMA; built when the compiler can (DBS_NN_HAVE_AVX2)
DBS_NN_KERNELS
}  // namespace fast_avx2

#undef DBS_NN_KERNELS

// Counter-based uniform in [0, 1) from (key, sample id, element index): the dropout stream.
float dropout_uniform(const DropoutKey& key, std::int64_t sample_id, std::uint64_t element);

}  // namespace dbs::nn
