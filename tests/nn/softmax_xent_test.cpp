// SoftmaxXent: a hand-computed batch, sum-over-rows semantics, the correct count with ties,
// stability on large logits, fast against reference, and dlogits against finite differences.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "lib/nn/kernels.h"
#include "tests/nn/check.h"

namespace dbs::nn::test {
namespace {

using Labels = std::vector<std::int32_t>;
using Xent = decltype(&ref::softmax_xent);

Labels random_labels(int n, int classes, std::mt19937& rng) {
  std::uniform_int_distribution<std::int32_t> dist(0, classes - 1);
  Labels l(static_cast<std::size_t>(n));
  for (auto& v : l) v = dist(rng);
  return l;
}

// Rows: [1, 2, 3] label 2 (argmax, correct); [0, 0, 0] label 1 (tie: argmax is 0, wrong);
// [0, 0, 0] label 0 (tie: argmax is 0, correct).
//   row 0: loss = log(1 + e^-1 + e^-2) = 0.40760596444,
//          dlogits = (e^-2, e^-1, 1) / (1 + e^-1 + e^-2) - (0, 0, 1)
//   rows 1, 2: loss = log 3, dlogits = 1/3 - onehot.
void hand_computed(Xent xent) {
  const Tensor logits = {1, 2, 3, 0, 0, 0, 0, 0, 0};
  const Labels labels = {2, 1, 0};
  Tensor d = poisoned(logits.size());
  int correct = -1;
  const double loss = xent(3, 3, logits.data(), labels.data(), d.data(), &correct);
  CHECK(loss == doctest::Approx(0.40760596444 + 2.0 * std::log(3.0)).epsilon(1e-6));
  CHECK(correct == 2);
  const double z = 1.0 + std::exp(-1.0) + std::exp(-2.0), third = 1.0 / 3.0;
  const double want[9] = {std::exp(-2.0) / z,
                          std::exp(-1.0) / z,
                          1.0 / z - 1.0,
                          third,
                          third - 1.0,
                          third,
                          third - 1.0,
                          third,
                          third};
  for (int j = 0; j < 9; ++j) {
    INFO("dlogits[" << j << "]");
    CHECK(static_cast<double>(d[static_cast<std::size_t>(j)]) ==
          doctest::Approx(want[j]).epsilon(1e-6));
  }
}

// The loss of a batch is the sum of its rows' losses; the correct count is the sum as well.
void sum_over_rows(Xent xent) {
  std::mt19937 rng(51);
  const int n = 9, classes = 6;
  const Tensor logits = random_tensor(static_cast<std::size_t>(n * classes), rng, -3.0f, 3.0f);
  const Labels labels = random_labels(n, classes, rng);
  int batch_correct = 0;
  const double batch = xent(n, classes, logits.data(), labels.data(), nullptr, &batch_correct);
  double rows = 0;
  int rows_correct = 0;
  for (int i = 0; i < n; ++i) {
    int c = 0;
    rows += xent(1, classes, logits.data() + i * classes, labels.data() + i, nullptr, &c);
    rows_correct += c;
  }
  CHECK(batch == doctest::Approx(rows).epsilon(1e-6));
  CHECK(batch_correct == rows_correct);
  CHECK(batch > static_cast<double>(n) * 0.1);  // a sum, not a mean, of positive losses
}

// Logits of +-1000 overflow a naive exp; the loss and gradients must stay finite and right.
void large_logits(Xent xent) {
  const Tensor logits = {1000, 0, -1000, 1000, 0, -1000};
  const Labels labels = {0, 1};
  Tensor d(logits.size());
  int correct = -1;
  const double loss = xent(2, 3, logits.data(), labels.data(), d.data(), &correct);
  CHECK(loss == doctest::Approx(1000.0).epsilon(1e-6));  // row 0 costs ~0, row 1 costs 1000
  CHECK(correct == 1);
  const Tensor want = {0, 0, 0, 1, -1, 0};
  check_close("dlogits", d, want, 1e-6);
}

void matches_reference(int threads) {
  struct Case {
    int n, classes;
  };
  std::mt19937 rng(52);
  for (const Case c : {Case{1, 10}, Case{7, 3}, Case{64, 10}, Case{33, 1000}}) {
    INFO("n=" << c.n << " classes=" << c.classes);
    const Tensor logits =
        random_tensor(static_cast<std::size_t>(c.n * c.classes), rng, -5.0f, 5.0f);
    const Labels labels = random_labels(c.n, c.classes, rng);
    Tensor d(logits.size()), fd = poisoned(logits.size());
    int correct = -1, fcorrect = -2;
    const double loss =
        ref::softmax_xent(c.n, c.classes, logits.data(), labels.data(), d.data(), &correct);
    double floss = 0, floss_bare = 0;
    with_threads(threads, [&] {
      floss =
          fast::softmax_xent(c.n, c.classes, logits.data(), labels.data(), fd.data(), &fcorrect);
      floss_bare =
          fast::softmax_xent(c.n, c.classes, logits.data(), labels.data(), nullptr, nullptr);
    });
    CHECK(floss == doctest::Approx(loss).epsilon(1e-5));
    CHECK(floss_bare == doctest::Approx(loss).epsilon(1e-5));
    CHECK(fcorrect == correct);
    check_close("dlogits", fd, d);
  }
}

// L = the returned loss itself; dlogits is its gradient. Smooth, so a step of 1e-2 leaves a
// truncation error of order 1e-5.
void matches_finite_differences(bool use_fast, int threads) {
  const Xent xent = use_fast ? fast::softmax_xent : ref::softmax_xent;
  std::mt19937 rng(53);
  const int n = 4, classes = 7;
  Tensor logits = random_tensor(static_cast<std::size_t>(n * classes), rng, -2.0f, 2.0f);
  const Labels labels = random_labels(n, classes, rng);
  Tensor d = poisoned(logits.size());
  with_threads(threads, [&] {
    xent(n, classes, logits.data(), labels.data(), d.data(), nullptr);
    check_gradient("dlogits", logits, d, [&] {
      return xent(n, classes, logits.data(), labels.data(), nullptr, nullptr);
    });
  });
}

}  // namespace

TEST_CASE("SoftmaxXent.Reference.HandComputed") {
  hand_computed(ref::softmax_xent);
}
TEST_CASE("SoftmaxXent.HandComputed") {
  hand_computed(fast::softmax_xent);
}
TEST_CASE("SoftmaxXent.Reference.LossIsSumOverRows") {
  sum_over_rows(ref::softmax_xent);
}
TEST_CASE("SoftmaxXent.LossIsSumOverRows") {
  sum_over_rows(fast::softmax_xent);
}
TEST_CASE("SoftmaxXent.Reference.LargeLogitsStayFinite") {
  large_logits(ref::softmax_xent);
}
TEST_CASE("SoftmaxXent.LargeLogitsStayFinite") {
  large_logits(fast::softmax_xent);
}
TEST_CASE("SoftmaxXent.FastMatchesReference.1thread") {
  matches_reference(1);
}
TEST_CASE("SoftmaxXent.FastMatchesReference.2threads") {
  matches_reference(2);
}
TEST_CASE("SoftmaxXent.Reference.MatchesFiniteDifferences") {
  matches_finite_differences(false, 1);
}
TEST_CASE("SoftmaxXent.MatchesFiniteDifferences.1thread") {
  matches_finite_differences(true, 1);
}
TEST_CASE("SoftmaxXent.MatchesFiniteDifferences.2threads") {
  matches_finite_differences(true, 2);
}

}  // namespace dbs::nn::test
