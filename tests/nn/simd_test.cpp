// The kernel builds of lib/nn/simd.h: every build this CPU runs matches the reference, the
// baseline is always there, and a build that is not there is refused by name.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>

#include "lib/common/error.h"
#include "lib/nn/simd.h"
#include "tests/nn/check.h"

namespace dbs::nn::test {
namespace {

// Restores automatic selection when a test case ends.
struct AutoAfter {
  ~AutoAfter() { use_simd("auto"); }
};

TEST_CASE("Simd.BaselineIsAlwaysSupportedAndLast") {
  const auto names = simd_supported();
  REQUIRE(!names.empty());
  CHECK((names.back() == "x86-64" || names.back() == "native"));
  CHECK(simd_in_use() == names.front());
}

TEST_CASE("Simd.UnknownBuildIsRefusedWithTheChoices") {
  AutoAfter restore;
  CHECK_THROWS_AS(use_simd("sse9"), ConfigError);
  try {
    use_simd("sse9");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()).find(simd_supported().back()) != std::string::npos);
  }
}

TEST_CASE("Simd.EveryBuildMatchesTheReference.2threads") {
  AutoAfter restore;
  std::mt19937 rng(21);
  const ConvShape s{9, 3, 10, 9, 8, 3, 1};
  const std::size_t nx = 9 * 3 * 10 * 9, nw = 8 * 3 * 3 * 3, ny = 9 * 8 * 10 * 9;
  const Tensor x = random_tensor(nx, rng), wt = random_tensor(nw, rng), b = random_tensor(8, rng),
               dy = random_tensor(ny, rng);
  Tensor y_ref(ny), dx_ref(nx), dw_ref(nw), db_ref(8);
  ref::conv2d_forward(s, x.data(), wt.data(), b.data(), y_ref.data());
  ref::conv2d_backward(s, x.data(), wt.data(), dy.data(), dx_ref.data(), dw_ref.data(), db_ref.data());
  const int n = 13, in = 70, out = 11;
  const Tensor dx_in = random_tensor(static_cast<std::size_t>(n) * in, rng),
               dwt = random_tensor(static_cast<std::size_t>(out) * in, rng),
               dbias = random_tensor(out, rng);
  Tensor d_ref(static_cast<std::size_t>(n) * out);
  ref::dense_forward(n, in, out, dx_in.data(), dwt.data(), dbias.data(), d_ref.data());
  for (const std::string& name : simd_supported()) {
    INFO(name);
    use_simd(name);
    CHECK(simd_in_use() == name);
    Tensor y = poisoned(ny), dx = poisoned(nx), dw = poisoned(nw), db = poisoned(8),
           d = poisoned(d_ref.size());
    with_threads(2, [&] {
      fast::conv2d_forward(s, x.data(), wt.data(), b.data(), y.data());
      fast::conv2d_backward(s, x.data(), wt.data(), dy.data(), dx.data(), dw.data(), db.data());
      fast::dense_forward(n, in, out, dx_in.data(), dwt.data(), dbias.data(), d.data());
    });
    check_close("conv y", y, y_ref);
    check_close("conv dx", dx, dx_ref);
    check_close("conv dw", dw, dw_ref);
    check_close("conv db", db, db_ref);
    check_close("dense y", d, d_ref);
  }
}

}  // namespace
}  // namespace dbs::nn::test
