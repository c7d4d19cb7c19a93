// Conv2d: fast against reference at 1 and 2 threads, thread-count independence of the fast
// kernel's bits, and both backward passes against central finite differences.
#include <doctest/doctest.h>

#include <random>

#include "lib/nn/kernels.h"
#include "tests/nn/check.h"

namespace dbs::nn::test {
namespace {

std::size_t x_size(const ConvShape& s) {
  return static_cast<std::size_t>(s.n) * s.c_in * s.h * s.w;
}
std::size_t w_size(const ConvShape& s) {
  return static_cast<std::size_t>(s.c_out) * s.c_in * s.k * s.k;
}
std::size_t y_size(const ConvShape& s) {
  return static_cast<std::size_t>(s.n) * s.c_out * s.h_out() * s.w_out();
}

// {n, c_in, h, w, c_out, k, pad}: k = 1, 3, 5 with pad 0 and k/2, one and several input
// channels, n = 1, odd n and n = 33 (several chunks), then the case-study layers.
const ConvShape kShapes[] = {
    {1, 1, 5, 5, 1, 1, 0},      {1, 1, 6, 7, 2, 3, 0},     {1, 1, 6, 7, 2, 3, 1},
    {7, 3, 8, 9, 4, 1, 0},      {7, 3, 8, 9, 4, 3, 1},     {7, 2, 9, 9, 3, 5, 0},
    {7, 3, 9, 8, 5, 5, 2},      {33, 2, 6, 6, 3, 3, 1},    {33, 4, 7, 5, 6, 3, 0},
    {33, 1, 10, 10, 2, 5, 2},   {16, 1, 28, 28, 32, 3, 0}, {16, 32, 13, 13, 128, 3, 0},
    {16, 128, 5, 5, 256, 3, 0},
};

// Several chunks and an uneven last chunk, plus a case-study layer. Growing sizes make the
// kernels' per-thread scratch buffers move, which exposes results that depend on their address.
const ConvShape kChunkedShapes[] = {{33, 3, 9, 8, 4, 3, 1},   {41, 2, 7, 7, 3, 3, 1},
                                    {20, 1, 12, 12, 8, 5, 2}, {50, 3, 8, 8, 6, 3, 0},
                                    {64, 4, 6, 6, 8, 3, 1},   {16, 32, 13, 13, 128, 3, 0}};

void forward_matches_reference(int threads) {
  std::mt19937 rng(11);
  for (const ConvShape& s : kShapes) {
    INFO(describe(s));
    const Tensor x = random_tensor(x_size(s), rng), wt = random_tensor(w_size(s), rng),
                 b = random_tensor(static_cast<std::size_t>(s.c_out), rng);
    Tensor want(y_size(s)), got = poisoned(y_size(s));
    ref::conv2d_forward(s, x.data(), wt.data(), b.data(), want.data());
    with_threads(threads,
                 [&] { fast::conv2d_forward(s, x.data(), wt.data(), b.data(), got.data()); });
    check_close("y", got, want);
  }
}

void backward_matches_reference(int threads) {
  std::mt19937 rng(12);
  for (const ConvShape& s : kShapes) {
    INFO(describe(s));
    const Tensor x = random_tensor(x_size(s), rng), wt = random_tensor(w_size(s), rng),
                 dy = random_tensor(y_size(s), rng);
    const std::size_t nb = static_cast<std::size_t>(s.c_out);
    Tensor dx(x.size()), dw(wt.size()), db(nb);
    ref::conv2d_backward(s, x.data(), wt.data(), dy.data(), dx.data(), dw.data(), db.data());
    Tensor fdx = poisoned(x.size()), fdw = poisoned(wt.size()), fdb = poisoned(nb);
    Tensor gdw = poisoned(wt.size()), gdb = poisoned(nb);  // from the call without dx
    with_threads(threads, [&] {
      fast::conv2d_backward(s, x.data(), wt.data(), dy.data(), fdx.data(), fdw.data(), fdb.data());
      fast::conv2d_backward(s, x.data(), wt.data(), dy.data(), nullptr, gdw.data(), gdb.data());
    });
    check_close("dx", fdx, dx);
    check_close("dw", fdw, dw);
    check_close("db", fdb, db);
    check_close("dw (dx == nullptr)", gdw, dw);
    check_close("db (dx == nullptr)", gdb, db);
  }
}

// Fast outputs at 1 and at 2 threads, forward and backward, must hold the same bits.
void same_bits_at_1_and_2_threads(bool backward) {
  std::mt19937 rng(13);
  for (const ConvShape& s : kChunkedShapes) {
    INFO(describe(s));
    const Tensor x = random_tensor(x_size(s), rng), wt = random_tensor(w_size(s), rng),
                 b = random_tensor(static_cast<std::size_t>(s.c_out), rng),
                 dy = random_tensor(y_size(s), rng);
    Tensor out[2][3];  // [run][y or dx, dw, db]
    const int threads[2] = {1, 2};
    for (int run = 0; run < 2; ++run) {
      Tensor* o = out[run];
      o[0].resize(backward ? x.size() : y_size(s));
      o[1].resize(wt.size());
      o[2].resize(b.size());
      with_threads(threads[run], [&] {
        if (backward)
          fast::conv2d_backward(s, x.data(), wt.data(), dy.data(), o[0].data(), o[1].data(),
                                o[2].data());
        else
          fast::conv2d_forward(s, x.data(), wt.data(), b.data(), o[0].data());
      });
    }
    check_same_bits(backward ? "dx" : "y", out[0][0], out[1][0]);
    check_same_bits("dw", out[0][1], out[1][1]);
    check_same_bits("db", out[0][2], out[1][2]);
  }
}

// Objective L = sum(y * r) for a fixed random r, so dL/dy = r: the backward pass fed dy = r
// must give the gradients that central differences of L measure. Conv is linear in each of
// x, wt and b, so the differences carry only float rounding.
void backward_matches_finite_differences(bool use_fast, int threads) {
  const auto forward = use_fast ? fast::conv2d_forward : ref::conv2d_forward;
  const auto backward = use_fast ? fast::conv2d_backward : ref::conv2d_backward;
  const ConvShape shapes[] = {
      {2, 2, 5, 6, 3, 3, 1}, {3, 1, 6, 5, 2, 3, 0}, {1, 3, 4, 4, 2, 1, 0}, {2, 2, 6, 6, 2, 5, 2}};
  std::mt19937 rng(14);
  with_threads(threads, [&] {
    for (const ConvShape& s : shapes) {
      INFO(describe(s));
      Tensor x = random_tensor(x_size(s), rng), wt = random_tensor(w_size(s), rng),
             b = random_tensor(static_cast<std::size_t>(s.c_out), rng);
      const Tensor r = random_tensor(y_size(s), rng);
      Tensor y(y_size(s));
      const auto loss = [&] {
        forward(s, x.data(), wt.data(), b.data(), y.data());
        return dot(y, r);
      };
      Tensor dx = poisoned(x.size()), dw = poisoned(wt.size()), db = poisoned(b.size());
      backward(s, x.data(), wt.data(), r.data(), dx.data(), dw.data(), db.data());
      check_gradient("dx", x, dx, loss);
      check_gradient("dw", wt, dw, loss);
      check_gradient("db", b, db, loss);
    }
  });
}

}  // namespace

TEST_CASE("Conv2d.Forward.FastMatchesReference.1thread") {
  forward_matches_reference(1);
}
TEST_CASE("Conv2d.Forward.FastMatchesReference.2threads") {
  forward_matches_reference(2);
}
TEST_CASE("Conv2d.Backward.FastMatchesReference.1thread") {
  backward_matches_reference(1);
}
TEST_CASE("Conv2d.Backward.FastMatchesReference.2threads") {
  backward_matches_reference(2);
}
TEST_CASE("Conv2d.Forward.SameBitsAt1And2Threads") {
  same_bits_at_1_and_2_threads(false);
}
TEST_CASE("Conv2d.Backward.SameBitsAt1And2Threads") {
  same_bits_at_1_and_2_threads(true);
}

TEST_CASE("Conv2d.Backward.Reference.MatchesFiniteDifferences") {
  backward_matches_finite_differences(false, 1);
}
TEST_CASE("Conv2d.Backward.MatchesFiniteDifferences.1thread") {
  backward_matches_finite_differences(true, 1);
}
TEST_CASE("Conv2d.Backward.MatchesFiniteDifferences.2threads") {
  backward_matches_finite_differences(true, 2);
}

// A hand-checked case: a 3x3 input, 3x3 kernel of ones, pad 1: each output is the sum of its
// in-bounds neighbourhood plus the bias.
TEST_CASE("Conv2d.Forward.Reference.HandComputed") {
  const ConvShape s{1, 1, 3, 3, 1, 3, 1};
  const Tensor x = {1, 2, 3, 4, 5, 6, 7, 8, 9}, wt(9, 1.0f), b = {0.5f};
  Tensor y(9);
  ref::conv2d_forward(s, x.data(), wt.data(), b.data(), y.data());
  const Tensor want = {12.5f, 21.5f, 16.5f, 27.5f, 45.5f, 33.5f, 24.5f, 39.5f, 28.5f};
  CHECK(y == want);
}

}  // namespace dbs::nn::test
