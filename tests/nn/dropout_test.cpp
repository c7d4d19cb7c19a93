// Dropout: the counter-based stream, masks keyed by (seed, epoch, layer, sample id) and not by
// batch position, the kept fraction and scale, fast against reference, and the backward pass.
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "lib/nn/kernels.h"
#include "tests/nn/check.h"

namespace dbs::nn::test {
namespace {

using Ids = std::vector<std::int64_t>;
using DropoutForward = decltype(&ref::dropout_forward);

// The mask of dropout_forward over rows with the given sample ids (x is all ones).
Tensor mask_of(DropoutForward forward, const DropoutKey& key, const Ids& ids,
               std::size_t per_sample, float rate) {
  const std::size_t count = ids.size() * per_sample;
  Tensor x(count, 1.0f), y(count), mask(count);
  forward(static_cast<int>(ids.size()), per_sample, rate, key, ids.data(), x.data(), y.data(),
          mask.data());
  return mask;
}

// Row `row` of a (rows, per_sample) tensor.
Tensor row_of(const Tensor& t, std::size_t row, std::size_t per_sample) {
  return Tensor(t.begin() + static_cast<std::ptrdiff_t>(row * per_sample),
                t.begin() + static_cast<std::ptrdiff_t>((row + 1) * per_sample));
}

double fraction_differing(const Tensor& a, const Tensor& b) {
  std::size_t differ = 0;
  for (std::size_t j = 0; j < a.size(); ++j) differ += a[j] != b[j] ? 1 : 0;
  return static_cast<double>(differ) / static_cast<double>(a.size());
}

// The same sample id gives the same mask row wherever it sits in the batch.
void mask_follows_sample_id(DropoutForward forward) {
  const DropoutKey key{42, 3, 1};
  const std::size_t per = 257;
  const Tensor a = mask_of(forward, key, {5, 9, 1000000007}, per, 0.5f);
  const Tensor b = mask_of(forward, key, {9, 1000000007, 77, 5}, per, 0.5f);
  CHECK(row_of(a, 0, per) == row_of(b, 3, per));                          // id 5
  CHECK(row_of(a, 1, per) == row_of(b, 0, per));                          // id 9
  CHECK(row_of(a, 2, per) == row_of(b, 1, per));                          // id 1000000007
  CHECK(fraction_differing(row_of(a, 0, per), row_of(a, 1, per)) > 0.3);  // ids differ
}

// Kept values are x / (1 - rate), dropped ones exactly 0, the kept fraction is 1 - rate (4
// standard deviations of slack on 40000 draws), and rate 0 keeps everything unchanged.
void kept_fraction_and_scale(DropoutForward forward) {
  std::mt19937 rng(41);
  const Ids ids = {3, 14, 15, 92};
  const std::size_t per = 10000, count = ids.size() * per;
  for (float rate : {0.0f, 0.25f, 0.5f, 0.8f}) {
    INFO("rate=" << rate);
    const Tensor x = random_tensor(count, rng, 0.5f, 1.5f);
    Tensor y(count), mask(count);
    forward(static_cast<int>(ids.size()), per, rate, DropoutKey{7, 0, 0}, ids.data(), x.data(),
            y.data(), mask.data());
    std::size_t kept = 0;
    bool scaled = true;
    const float scale = 1.0f / (1.0f - rate);
    for (std::size_t j = 0; j < count; ++j) {
      if (mask[j] == 0.0f) {
        scaled = scaled && y[j] == 0.0f;
        continue;
      }
      ++kept;
      scaled = scaled && std::abs(mask[j] - scale) <= 1e-6f * scale &&
               std::abs(y[j] - x[j] * scale) <= 1e-6f * std::abs(x[j] * scale);
    }
    CHECK(scaled);
    const double p = 1.0 - static_cast<double>(rate);
    const double fraction = static_cast<double>(kept) / static_cast<double>(count);
    CHECK(std::abs(fraction - p) <= 4.0 * std::sqrt(p * (1.0 - p) / static_cast<double>(count)));
    if (rate == 0.0f) CHECK(y == x);
  }
}

// A new epoch, layer or seed gives a new mask: at rate 0.5 about half the elements change.
void key_changes_mask(DropoutForward forward) {
  const Ids ids = {1, 2, 3};
  const std::size_t per = 1000;
  const Tensor base = mask_of(forward, DropoutKey{9, 4, 0}, ids, per, 0.5f);
  CHECK(mask_of(forward, DropoutKey{9, 4, 0}, ids, per, 0.5f) == base);
  CHECK(fraction_differing(base, mask_of(forward, DropoutKey{9, 5, 0}, ids, per, 0.5f)) > 0.4);
  CHECK(fraction_differing(base, mask_of(forward, DropoutKey{9, 4, 1}, ids, per, 0.5f)) > 0.4);
  CHECK(fraction_differing(base, mask_of(forward, DropoutKey{10, 4, 0}, ids, per, 0.5f)) > 0.4);
}

void matches_reference(int threads) {
  std::mt19937 rng(42);
  const Ids ids = {0, 17, 5, 123456789012345, 3, 99, 100};
  const DropoutKey key{1, 2, 3};
  for (std::size_t per : {std::size_t{1}, std::size_t{33}, std::size_t{5000}}) {
    INFO("per_sample=" << per);
    const std::size_t count = ids.size() * per;
    const Tensor x = random_tensor(count, rng), dy = random_tensor(count, rng);
    Tensor y(count), mask(count), dx(count);
    ref::dropout_forward(static_cast<int>(ids.size()), per, 0.4f, key, ids.data(), x.data(),
                         y.data(), mask.data());
    ref::dropout_backward(count, mask.data(), dy.data(), dx.data());
    Tensor fy = poisoned(count), fmask = poisoned(count), fdx = poisoned(count), inplace = dy;
    with_threads(threads, [&] {
      fast::dropout_forward(static_cast<int>(ids.size()), per, 0.4f, key, ids.data(), x.data(),
                            fy.data(), fmask.data());
      fast::dropout_backward(count, mask.data(), dy.data(), fdx.data());
      fast::dropout_backward(count, mask.data(), inplace.data(), inplace.data());
    });
    check_close("y", fy, y);
    check_close("mask", fmask, mask);
    check_close("dx", fdx, dx);
    check_close("dx (in place)", inplace, dx);
  }
}

// L = sum(dropout(x) * r): linear in x for a fixed key, dL/dx = r * mask.
void matches_finite_differences(bool use_fast, int threads) {
  const auto forward = use_fast ? fast::dropout_forward : ref::dropout_forward;
  const auto backward = use_fast ? fast::dropout_backward : ref::dropout_backward;
  std::mt19937 rng(43);
  const Ids ids = {4, 8, 15};
  const std::size_t per = 50, count = ids.size() * per;
  Tensor x = random_tensor(count, rng);
  const Tensor r = random_tensor(count, rng);
  Tensor y(count), mask(count), dx = poisoned(count);
  with_threads(threads, [&] {
    const auto loss = [&] {
      forward(static_cast<int>(ids.size()), per, 0.3f, DropoutKey{5, 1, 2}, ids.data(), x.data(),
              y.data(), mask.data());
      return dot(y, r);
    };
    loss();
    backward(count, mask.data(), r.data(), dx.data());
    check_gradient("dx", x, dx, loss);
  });
}

}  // namespace

TEST_CASE("Dropout.Uniform.InUnitIntervalAndEvenlySpread") {
  const DropoutKey key{123, 0, 0};
  const std::size_t draws = 200000;
  std::vector<std::size_t> bins(10, 0);
  double sum = 0;
  bool in_range = true;
  for (std::size_t j = 0; j < draws; ++j) {
    const float u = dropout_uniform(key, static_cast<std::int64_t>(j % 97), j / 97);
    in_range = in_range && u >= 0.0f && u < 1.0f;
    sum += static_cast<double>(u);
    ++bins[std::min<std::size_t>(9, static_cast<std::size_t>(u * 10.0f))];
  }
  CHECK(in_range);
  CHECK(std::abs(sum / static_cast<double>(draws) - 0.5) < 0.005);
  for (std::size_t b : bins) CHECK(std::abs(static_cast<double>(b) / draws - 0.1) < 0.005);
  CHECK(dropout_uniform(key, 5, 6) == dropout_uniform(key, 5, 6));
  CHECK(dropout_uniform(key, 5, 6) != dropout_uniform(key, 6, 5));
}

TEST_CASE("Dropout.Reference.MaskFollowsSampleId") {
  mask_follows_sample_id(ref::dropout_forward);
}
TEST_CASE("Dropout.MaskFollowsSampleId") {
  mask_follows_sample_id(fast::dropout_forward);
}
TEST_CASE("Dropout.Reference.KeptFractionAndScale") {
  kept_fraction_and_scale(ref::dropout_forward);
}
TEST_CASE("Dropout.KeptFractionAndScale") {
  kept_fraction_and_scale(fast::dropout_forward);
}
TEST_CASE("Dropout.Reference.KeyChangesMask") {
  key_changes_mask(ref::dropout_forward);
}
TEST_CASE("Dropout.KeyChangesMask") {
  key_changes_mask(fast::dropout_forward);
}
TEST_CASE("Dropout.FastMatchesReference.1thread") {
  matches_reference(1);
}
TEST_CASE("Dropout.FastMatchesReference.2threads") {
  matches_reference(2);
}
TEST_CASE("Dropout.Backward.Reference.MatchesFiniteDifferences") {
  matches_finite_differences(false, 1);
}
TEST_CASE("Dropout.Backward.MatchesFiniteDifferences.1thread") {
  matches_finite_differences(true, 1);
}
TEST_CASE("Dropout.Backward.MatchesFiniteDifferences.2threads") {
  matches_finite_differences(true, 2);
}

}  // namespace dbs::nn::test
