// Dense: fast against reference at 1 and 2 threads, thread-count independence of the fast
// kernel's bits, and both backward passes against central finite differences.
#include <doctest/doctest.h>

#include <random>

#include "lib/nn/kernels.h"
#include "tests/nn/check.h"

namespace dbs::nn::test {
namespace {

struct DenseShape {
  int n, in, out;
};

std::string describe(const DenseShape& s) {
  return "n=" + std::to_string(s.n) + " in=" + std::to_string(s.in) +
         " out=" + std::to_string(s.out);
}

std::size_t sz(int a, int b) {
  return static_cast<std::size_t>(a) * static_cast<std::size_t>(b);
}

// One sample, small odd shapes, several chunks (n = 33, 50), and the case-study classifier.
const DenseShape kShapes[] = {{1, 1, 1},   {1, 9, 4},    {5, 7, 3},       {16, 10, 10},
                              {33, 17, 5}, {50, 64, 10}, {33, 256, 1000}, {16, 1024, 10}};

void forward_matches_reference(int threads) {
  std::mt19937 rng(21);
  for (const DenseShape& s : kShapes) {
    INFO(describe(s));
    const Tensor x = random_tensor(sz(s.n, s.in), rng), wt = random_tensor(sz(s.out, s.in), rng),
                 b = random_tensor(sz(1, s.out), rng);
    Tensor want(sz(s.n, s.out)), got = poisoned(sz(s.n, s.out));
    ref::dense_forward(s.n, s.in, s.out, x.data(), wt.data(), b.data(), want.data());
    with_threads(threads, [&] {
      fast::dense_forward(s.n, s.in, s.out, x.data(), wt.data(), b.data(), got.data());
    });
    check_close("y", got, want);
  }
}

void backward_matches_reference(int threads) {
  std::mt19937 rng(22);
  for (const DenseShape& s : kShapes) {
    INFO(describe(s));
    const Tensor x = random_tensor(sz(s.n, s.in), rng), wt = random_tensor(sz(s.out, s.in), rng),
                 dy = random_tensor(sz(s.n, s.out), rng);
    Tensor dx(x.size()), dw(wt.size()), db(sz(1, s.out));
    ref::dense_backward(s.n, s.in, s.out, x.data(), wt.data(), dy.data(), dx.data(), dw.data(),
                        db.data());
    Tensor fdx = poisoned(dx.size()), fdw = poisoned(dw.size()), fdb = poisoned(db.size());
    Tensor gdw = poisoned(dw.size()), gdb = poisoned(db.size());  // from the call without dx
    with_threads(threads, [&] {
      fast::dense_backward(s.n, s.in, s.out, x.data(), wt.data(), dy.data(), fdx.data(), fdw.data(),
                           fdb.data());
      fast::dense_backward(s.n, s.in, s.out, x.data(), wt.data(), dy.data(), nullptr, gdw.data(),
                           gdb.data());
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
  const DenseShape shapes[] = {{33, 256, 1000}, {50, 64, 10}, {100, 33, 7}};
  std::mt19937 rng(23);
  for (const DenseShape& s : shapes) {
    INFO(describe(s));
    const Tensor x = random_tensor(sz(s.n, s.in), rng), wt = random_tensor(sz(s.out, s.in), rng),
                 b = random_tensor(sz(1, s.out), rng), dy = random_tensor(sz(s.n, s.out), rng);
    Tensor out[2][3];  // [run][y or dx, dw, db]
    const int threads[2] = {1, 2};
    for (int run = 0; run < 2; ++run) {
      Tensor* o = out[run];
      o[0].resize(backward ? x.size() : dy.size());
      o[1].resize(wt.size());
      o[2].resize(b.size());
      with_threads(threads[run], [&] {
        if (backward)
          fast::dense_backward(s.n, s.in, s.out, x.data(), wt.data(), dy.data(), o[0].data(),
                               o[1].data(), o[2].data());
        else
          fast::dense_forward(s.n, s.in, s.out, x.data(), wt.data(), b.data(), o[0].data());
      });
    }
    check_same_bits(backward ? "dx" : "y", out[0][0], out[1][0]);
    check_same_bits("dw", out[0][1], out[1][1]);
    check_same_bits("db", out[0][2], out[1][2]);
  }
}

// Objective L = sum(y * r) for a fixed random r (dL/dy = r); dense is linear in x, wt and b.
void backward_matches_finite_differences(bool use_fast, int threads) {
  const auto forward = use_fast ? fast::dense_forward : ref::dense_forward;
  const auto backward = use_fast ? fast::dense_backward : ref::dense_backward;
  const DenseShape shapes[] = {{5, 7, 3}, {3, 4, 6}, {20, 6, 5}};
  std::mt19937 rng(24);
  with_threads(threads, [&] {
    for (const DenseShape& s : shapes) {
      INFO(describe(s));
      Tensor x = random_tensor(sz(s.n, s.in), rng), wt = random_tensor(sz(s.out, s.in), rng),
             b = random_tensor(sz(1, s.out), rng);
      const Tensor r = random_tensor(sz(s.n, s.out), rng);
      Tensor y(r.size());
      const auto loss = [&] {
        forward(s.n, s.in, s.out, x.data(), wt.data(), b.data(), y.data());
        return dot(y, r);
      };
      Tensor dx = poisoned(x.size()), dw = poisoned(wt.size()), db = poisoned(b.size());
      backward(s.n, s.in, s.out, x.data(), wt.data(), r.data(), dx.data(), dw.data(), db.data());
      check_gradient("dx", x, dx, loss);
      check_gradient("dw", wt, dw, loss);
      check_gradient("db", b, db, loss);
    }
  });
}

}  // namespace

TEST_CASE("Dense.Forward.FastMatchesReference.1thread") {
  forward_matches_reference(1);
}
TEST_CASE("Dense.Forward.FastMatchesReference.2threads") {
  forward_matches_reference(2);
}
TEST_CASE("Dense.Backward.FastMatchesReference.1thread") {
  backward_matches_reference(1);
}
TEST_CASE("Dense.Backward.FastMatchesReference.2threads") {
  backward_matches_reference(2);
}
TEST_CASE("Dense.Forward.SameBitsAt1And2Threads") {
  same_bits_at_1_and_2_threads(false);
}
TEST_CASE("Dense.Backward.SameBitsAt1And2Threads") {
  same_bits_at_1_and_2_threads(true);
}

TEST_CASE("Dense.Backward.Reference.MatchesFiniteDifferences") {
  backward_matches_finite_differences(false, 1);
}
TEST_CASE("Dense.Backward.MatchesFiniteDifferences.1thread") {
  backward_matches_finite_differences(true, 1);
}
TEST_CASE("Dense.Backward.MatchesFiniteDifferences.2threads") {
  backward_matches_finite_differences(true, 2);
}

// y = x wt^T + b by hand for one sample: wt = [[1, 2], [3, 4], [5, 6]], x = [1, -1].
TEST_CASE("Dense.Forward.Reference.HandComputed") {
  const Tensor x = {1, -1}, wt = {1, 2, 3, 4, 5, 6}, b = {0.5f, 0, -1};
  Tensor y(3);
  ref::dense_forward(1, 2, 3, x.data(), wt.data(), b.data(), y.data());
  CHECK(y == Tensor{-0.5f, -1, -2});
}

}  // namespace dbs::nn::test
