// fast::* forwards to the table of the selected instruction set. Each table is filled from one
// namespace (fast_x86_64, fast_avx2) built from the same sources with different flags.
#include "lib/nn/simd.h"

#include <atomic>

#include "lib/common/error.h"
#include "lib/nn/kernels.h"

#ifndef DBS_NN_BASE_LABEL
#define DBS_NN_BASE_LABEL "x86-64"
#endif

namespace dbs::nn {
namespace {

struct Table {
  const char* name;
  decltype(&fast_x86_64::conv2d_forward) conv2d_forward;
  decltype(&fast_x86_64::conv2d_backward) conv2d_backward;
  decltype(&fast_x86_64::dense_forward) dense_forward;
  decltype(&fast_x86_64::dense_backward) dense_backward;
  decltype(&fast_x86_64::maxpool_forward) maxpool_forward;
  decltype(&fast_x86_64::maxpool_backward) maxpool_backward;
  decltype(&fast_x86_64::relu_forward) relu_forward;
  decltype(&fast_x86_64::relu_backward) relu_backward;
  decltype(&fast_x86_64::dropout_forward) dropout_forward;
  decltype(&fast_x86_64::dropout_backward) dropout_backward;
  decltype(&fast_x86_64::softmax_xent) softmax_xent;
};

#define DBS_NN_TABLE(ns, label)                                                                \
  Table {                                                                                      \
    label, &ns::conv2d_forward, &ns::conv2d_backward, &ns::dense_forward, &ns::dense_backward, \
        &ns::maxpool_forward, &ns::maxpool_backward, &ns::relu_forward, &ns::relu_backward,    \
        &ns::dropout_forward, &ns::dropout_backward, &ns::softmax_xent                         \
  }

const Table kBase = DBS_NN_TABLE(fast_x86_64, DBS_NN_BASE_LABEL);
#ifdef DBS_NN_HAVE_AVX2
const Table kAvx2 = DBS_NN_TABLE(fast_avx2, "avx2+fma");
#endif

// Supported tables, best first.
std::vector<const Table*> supported() {
  std::vector<const Table*> out;
#ifdef DBS_NN_HAVE_AVX2
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) out.push_back(&kAvx2);
#endif
  out.push_back(&kBase);
  return out;
}

std::atomic<const Table*> g_active{nullptr};

const Table& active() {
  const Table* t = g_active.load(std::memory_order_acquire);
  if (t == nullptr) {
    t = supported().front();
    g_active.store(t, std::memory_order_release);
  }
  return *t;
}

}  // namespace

std::string simd_in_use() {
  return active().name;
}

std::vector<std::string> simd_supported() {
  std::vector<std::string> out;
  for (const Table* t : supported()) out.emplace_back(t->name);
  return out;
}

void use_simd(const std::string& name) {
  std::string names;
  for (const Table* t : supported()) {
    if (name == "auto" || name == t->name) {
      g_active.store(t, std::memory_order_release);
      return;
    }
    names += std::string(names.empty() ? "" : ", ") + t->name;
  }
  throw ConfigError("--simd " + name + ": this binary on this CPU has auto, " + names);
}

namespace fast {

void conv2d_forward(const ConvShape& s, const float* x, const float* wt, const float* b, float* y) {
  active().conv2d_forward(s, x, wt, b, y);
}
void conv2d_backward(const ConvShape& s, const float* x, const float* wt, const float* dy,
                     float* dx, float* dw, float* db) {
  active().conv2d_backward(s, x, wt, dy, dx, dw, db);
}
void dense_forward(int n, int in, int out, const float* x, const float* wt, const float* b,
                   float* y) {
  active().dense_forward(n, in, out, x, wt, b, y);
}
void dense_backward(int n, int in, int out, const float* x, const float* wt, const float* dy,
                    float* dx, float* dw, float* db) {
  active().dense_backward(n, in, out, x, wt, dy, dx, dw, db);
}
void maxpool_forward(const PoolShape& s, const float* x, float* y, std::int32_t* arg) {
  active().maxpool_forward(s, x, y, arg);
}
void maxpool_backward(const PoolShape& s, const float* dy, const std::int32_t* arg, float* dx) {
  active().maxpool_backward(s, dy, arg, dx);
}
void relu_forward(std::size_t count, const float* x, float* y) {
  active().relu_forward(count, x, y);
}
void relu_backward(std::size_t count, const float* y, const float* dy, float* dx) {
  active().relu_backward(count, y, dy, dx);
}
void dropout_forward(int n, std::size_t per_sample, float rate, const DropoutKey& key,
                     const std::int64_t* sample_ids, const float* x, float* y, float* mask) {
  active().dropout_forward(n, per_sample, rate, key, sample_ids, x, y, mask);
}
void dropout_backward(std::size_t count, const float* mask, const float* dy, float* dx) {
  active().dropout_backward(count, mask, dy, dx);
}
double softmax_xent(int n, int classes, const float* logits, const std::int32_t* labels,
                    float* dlogits, int* correct) {
  return active().softmax_xent(n, classes, logits, labels, dlogits, correct);
}

}  // namespace fast
}  // namespace dbs::nn
