// MaxPool and ReLU: fast against reference at 1 and 2 threads, the tie and odd-size rules, and
// the backward passes against central finite differences on inputs kept away from ties and kinks.
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "lib/nn/kernels.h"
#include "tests/nn/check.h"

namespace dbs::nn::test {
namespace {

std::size_t in_size(const PoolShape& s) {
  return static_cast<std::size_t>(s.n) * s.c * s.h * s.w;
}
std::size_t out_size(const PoolShape& s) {
  return static_cast<std::size_t>(s.n) * s.c * s.h_out() * s.w_out();
}
std::string describe(const PoolShape& s) {
  return "n=" + std::to_string(s.n) + " c=" + std::to_string(s.c) + " h=" + std::to_string(s.h) +
         " w=" + std::to_string(s.w) + " k=" + std::to_string(s.k);
}

// Values from {-1, 0, 1, 2}: many windows hold ties, so the first-max rule is exercised.
Tensor tied_tensor(std::size_t count, std::mt19937& rng) {
  std::uniform_int_distribution<int> dist(-1, 2);
  Tensor t(count);
  for (float& v : t) v = static_cast<float>(dist(rng));
  return t;
}

// A shuffled grid of distinct values 0.1 apart: a step of 1e-2 never changes any window's max.
Tensor distinct_tensor(std::size_t count, std::mt19937& rng) {
  Tensor t(count);
  for (std::size_t j = 0; j < count; ++j) t[j] = 0.1f * static_cast<float>(j) - 1.0f;
  std::shuffle(t.begin(), t.end(), rng);
  return t;
}

// Forward: y and arg against the reference. Backward: fed the reference's arg, so a forward
// bug cannot hide a backward one.
void maxpool_matches_reference(bool backward, int threads) {
  const PoolShape shapes[] = {{1, 1, 4, 4, 2},     {7, 3, 13, 13, 2}, {33, 4, 5, 7, 2},
                              {16, 32, 26, 26, 2}, {3, 2, 9, 10, 3},  {2, 1, 1, 1, 1}};
  std::mt19937 rng(31);
  for (const PoolShape& s : shapes)
    for (bool ties : {false, true}) {
      INFO(describe(s) << (ties ? " with ties" : ""));
      const Tensor x = ties ? tied_tensor(in_size(s), rng) : random_tensor(in_size(s), rng);
      const Tensor dy = random_tensor(out_size(s), rng);
      Tensor y(out_size(s)), dx(in_size(s));
      std::vector<std::int32_t> arg(out_size(s));
      ref::maxpool_forward(s, x.data(), y.data(), arg.data());
      ref::maxpool_backward(s, dy.data(), arg.data(), dx.data());
      Tensor fy = poisoned(y.size()), fdx = poisoned(dx.size());
      std::vector<std::int32_t> farg(arg.size(), -1);
      with_threads(threads, [&] {
        if (backward)
          fast::maxpool_backward(s, dy.data(), arg.data(), fdx.data());
        else
          fast::maxpool_forward(s, x.data(), fy.data(), farg.data());
      });
      if (backward) {
        check_close("dx", fdx, dx);
      } else {
        check_close("y", fy, y);
        CHECK(farg == arg);
      }
    }
}

// L = sum(maxpool(x) * r); odd h and w leave a last row and column that get no gradient.
void maxpool_matches_finite_differences(bool use_fast, int threads) {
  const auto forward = use_fast ? fast::maxpool_forward : ref::maxpool_forward;
  const auto backward = use_fast ? fast::maxpool_backward : ref::maxpool_backward;
  const PoolShape shapes[] = {{2, 2, 5, 5, 2}, {1, 3, 6, 4, 2}, {2, 1, 7, 6, 3}};
  std::mt19937 rng(32);
  with_threads(threads, [&] {
    for (const PoolShape& s : shapes) {
      INFO(describe(s));
      Tensor x = distinct_tensor(in_size(s), rng);
      const Tensor r = random_tensor(out_size(s), rng);
      Tensor y(out_size(s));
      std::vector<std::int32_t> arg(out_size(s));
      const auto loss = [&] {
        forward(s, x.data(), y.data(), arg.data());
        return dot(y, r);
      };
      loss();  // arg for the unperturbed x
      Tensor dx = poisoned(x.size());
      backward(s, r.data(), arg.data(), dx.data());
      check_gradient("dx", x, dx, loss);
    }
  });
}

// Ties take the first maximum in row-major window order; a 13x13 map pools to 6x6 and its last
// row and column are never selected.
void maxpool_rules(bool use_fast) {
  const auto forward = use_fast ? fast::maxpool_forward : ref::maxpool_forward;
  const PoolShape s{1, 1, 13, 13, 2};
  REQUIRE(s.h_out() == 6);
  Tensor x(in_size(s), 1.0f), y(out_size(s));
  x[12] = 5.0f;           // row 0, column 12: outside every window
  x[12 * 13 + 3] = 5.0f;  // row 12: outside every window
  x[3 * 13 + 2] = 3.0f;   // window (1, 1), rows 2-3 and columns 2-3: its second row ...
  x[2 * 13 + 3] = 3.0f;   // ... and its first row, second column: the first maximum
  std::vector<std::int32_t> arg(out_size(s), -1);
  forward(s, x.data(), y.data(), arg.data());
  CHECK(arg[0] == 0);  // all ones: the window's top-left element
  CHECK(arg[7] == 2 * 13 + 3);
  CHECK(y[7] == 3.0f);
  for (std::size_t j = 0; j < arg.size(); ++j) {
    CHECK(arg[j] / 13 < 12);
    CHECK(arg[j] % 13 < 12);
  }
  CHECK(*std::max_element(y.begin(), y.end()) == 3.0f);
}

void relu_matches_reference(int threads) {
  std::mt19937 rng(33);
  for (std::size_t count : {std::size_t{1}, std::size_t{17}, std::size_t{1000003}}) {
    INFO("count=" << count);
    Tensor x = random_tensor(count, rng);
    for (std::size_t j = 0; j < count; j += 7) x[j] = 0.0f;  // exact zeros give no gradient
    const Tensor dy = random_tensor(count, rng);
    Tensor y(count), dx(count);
    ref::relu_forward(count, x.data(), y.data());
    ref::relu_backward(count, y.data(), dy.data(), dx.data());
    Tensor fy = poisoned(count), fdx = poisoned(count), inplace = x, inplace_d = dy;
    with_threads(threads, [&] {
      fast::relu_forward(count, x.data(), fy.data());
      fast::relu_backward(count, fy.data(), dy.data(), fdx.data());
      fast::relu_forward(count, inplace.data(), inplace.data());
      fast::relu_backward(count, inplace.data(), inplace_d.data(), inplace_d.data());
    });
    check_close("y", fy, y);
    check_close("dx", fdx, dx);
    check_close("y (in place)", inplace, y);
    check_close("dx (in place)", inplace_d, dx);
  }
}

// L = sum(relu(x) * r) with every |x| >= 0.1, so a step of 1e-2 never crosses the kink.
void relu_matches_finite_differences(bool use_fast, int threads) {
  const auto forward = use_fast ? fast::relu_forward : ref::relu_forward;
  const auto backward = use_fast ? fast::relu_backward : ref::relu_backward;
  std::mt19937 rng(34);
  const std::size_t count = 301;
  Tensor x = random_tensor(count, rng, 0.1f, 1.0f);
  for (std::size_t j = 0; j < count; j += 2) x[j] = -x[j];
  const Tensor r = random_tensor(count, rng);
  Tensor y(count), dx = poisoned(count);
  with_threads(threads, [&] {
    const auto loss = [&] {
      forward(count, x.data(), y.data());
      return dot(y, r);
    };
    loss();
    backward(count, y.data(), r.data(), dx.data());
    check_gradient("dx", x, dx, loss);
  });
}

}  // namespace

TEST_CASE("MaxPool.Forward.FastMatchesReference.1thread") {
  maxpool_matches_reference(false, 1);
}
TEST_CASE("MaxPool.Forward.FastMatchesReference.2threads") {
  maxpool_matches_reference(false, 2);
}
TEST_CASE("MaxPool.Backward.FastMatchesReference.1thread") {
  maxpool_matches_reference(true, 1);
}
TEST_CASE("MaxPool.Backward.FastMatchesReference.2threads") {
  maxpool_matches_reference(true, 2);
}
TEST_CASE("MaxPool.Backward.Reference.MatchesFiniteDifferences") {
  maxpool_matches_finite_differences(false, 1);
}
TEST_CASE("MaxPool.Backward.MatchesFiniteDifferences.1thread") {
  maxpool_matches_finite_differences(true, 1);
}
TEST_CASE("MaxPool.Backward.MatchesFiniteDifferences.2threads") {
  maxpool_matches_finite_differences(true, 2);
}
TEST_CASE("MaxPool.Forward.Reference.FirstMaxOnTiesAndOddSizes") {
  maxpool_rules(false);
}
TEST_CASE("MaxPool.Forward.FirstMaxOnTiesAndOddSizes") {
  maxpool_rules(true);
}

TEST_CASE("ReLU.FastMatchesReference.1thread") {
  relu_matches_reference(1);
}
TEST_CASE("ReLU.FastMatchesReference.2threads") {
  relu_matches_reference(2);
}
TEST_CASE("ReLU.Backward.Reference.MatchesFiniteDifferences") {
  relu_matches_finite_differences(false, 1);
}
TEST_CASE("ReLU.Backward.MatchesFiniteDifferences.1thread") {
  relu_matches_finite_differences(true, 1);
}
TEST_CASE("ReLU.Backward.MatchesFiniteDifferences.2threads") {
  relu_matches_finite_differences(true, 2);
}

}  // namespace dbs::nn::test
