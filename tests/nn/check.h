// Shared helpers of the nn kernel tests: random tensors, fast-vs-reference comparison, thread
// arenas, and central finite differences.
#pragma once

#include <doctest/doctest.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "lib/nn/kernels.h"

namespace dbs::nn::test {

using Tensor = std::vector<float>;

// count values uniform in [lo, hi) from rng.
inline Tensor random_tensor(std::size_t count, std::mt19937& rng, float lo = -1.0f,
                            float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  Tensor t(count);
  for (float& v : t) v = dist(rng);
  return t;
}

// An output buffer pre-filled with NaN: a kernel that accumulates into it, or skips an element,
// leaves NaN behind and fails the comparison.
inline Tensor poisoned(std::size_t count) {
  return Tensor(count, std::numeric_limits<float>::quiet_NaN());
}

// Runs f on a TBB arena of `threads` threads.
template <typename F>
void with_threads(int threads, F&& f) {
  tbb::task_arena arena(threads);
  arena.execute(f);
}

// CHECKs max|got - want| <= tol * max(1, max|want|); NaN anywhere fails.
inline void check_close(const char* what, const Tensor& got, const Tensor& want,
                        double tol = 1e-4) {
  REQUIRE(got.size() == want.size());
  double max_err = 0, max_ref = 0;
  std::size_t worst = 0;
  bool finite = true;
  for (std::size_t j = 0; j < got.size(); ++j) {
    const double g = static_cast<double>(got[j]), w = static_cast<double>(want[j]);
    if (!std::isfinite(g) || !std::isfinite(w)) finite = false;
    max_ref = std::max(max_ref, std::abs(w));
    if (std::abs(g - w) > max_err) {
      max_err = std::abs(g - w);
      worst = j;
    }
  }
  INFO(std::string(what) << ": max error " << max_err << " at " << worst << " (max |ref| "
                         << max_ref << ")");
  CHECK(finite);
  CHECK(max_err <= tol * std::max(1.0, max_ref));
}

// CHECKs that two tensors hold the same bits; on failure names how many differ and by how much.
inline void check_same_bits(const char* what, const Tensor& a, const Tensor& b) {
  REQUIRE(a.size() == b.size());
  std::size_t differ = 0;
  double max_diff = 0;
  for (std::size_t j = 0; j < a.size(); ++j)
    if (std::memcmp(&a[j], &b[j], sizeof(float)) != 0) {
      ++differ;
      max_diff =
          std::max(max_diff, std::abs(static_cast<double>(a[j]) - static_cast<double>(b[j])));
    }
  INFO(std::string(what) << ": " << differ << " of " << a.size() << " elements differ, by up to "
                         << max_diff);
  CHECK(differ == 0);
}

// sum(y * r) in double: the scalar objective whose gradient with respect to y is r.
inline double dot(const Tensor& y, const Tensor& r) {
  double s = 0;
  for (std::size_t j = 0; j < y.size(); ++j)
    s += static_cast<double>(y[j]) * static_cast<double>(r[j]);
  return s;
}

// Compares the analytic gradient `grad` of loss() with respect to v against central differences:
// each v[j] is moved by +-step (the step actually taken after float rounding is used) and loss()
// re-evaluated. CHECKs |fd - grad| <= tol * max(1, |grad|) for every element.
template <typename Loss>
void check_gradient(const char* what, Tensor& v, const Tensor& grad, Loss&& loss,
                    float step = 1e-2f, double tol = 1e-2) {
  REQUIRE(v.size() == grad.size());
  double worst_excess = -1, worst_fd = 0, worst_grad = 0;
  std::size_t worst = 0;
  for (std::size_t j = 0; j < v.size(); ++j) {
    const float saved = v[j];
    v[j] = saved + step;
    const double up = loss(), taken_up = static_cast<double>(v[j]);
    v[j] = saved - step;
    const double down = loss(), taken_down = static_cast<double>(v[j]);
    v[j] = saved;
    const double fd = (up - down) / (taken_up - taken_down);
    const double g = static_cast<double>(grad[j]);
    const double excess = std::abs(fd - g) - tol * std::max(1.0, std::abs(g));
    if (excess > worst_excess || j == 0) {
      worst_excess = excess;
      worst = j;
      worst_fd = fd;
      worst_grad = g;
    }
  }
  INFO(std::string(what) << ": worst element " << worst << " finite difference " << worst_fd
                         << " analytic " << worst_grad);
  CHECK(worst_excess <= 0);
}

// "n=7 c_in=3 ..." for INFO lines.
inline std::string describe(const ConvShape& s) {
  std::ostringstream os;
  os << "n=" << s.n << " c_in=" << s.c_in << " h=" << s.h << " w=" << s.w << " c_out=" << s.c_out
     << " k=" << s.k << " pad=" << s.pad;
  return os.str();
}

}  // namespace dbs::nn::test
