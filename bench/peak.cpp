// dbs-bench peak: this core's single-precision FMA peak, measured with independent FMA chains.
#include <immintrin.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "bench/bench.h"
#include "lib/common/cli.h"
#include "lib/common/timer.h"

namespace dbs::bench {

namespace {

// 12 independent accumulators hide the FMA latency on two FMA pipes. Each returns the Peak.
constexpr int kChains = 12;
constexpr long kInner = 1L << 20;

// 8-wide FMA chains, built for AVX2 + FMA whatever the build's baseline (the kernels of lib/nn
// pick the same instruction set at start).
#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) Peak peak_avx2_fma(double seconds) {
  constexpr int kWidth = 8;
  double flops = 0.0;
  float sink = 0.0f;
  Stopwatch sw;
  const double cpu0 = cpu_seconds();
  __m256 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(0.001f * static_cast<float>(i));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  while (sw.seconds() < seconds) {
    for (long it = 0; it < kInner; ++it)
      for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
    flops += 2.0 * kWidth * kChains * static_cast<double>(kInner);
  }
  for (int i = 0; i < kChains; ++i) {
    alignas(32) float v[kWidth];
    _mm256_store_ps(v, acc[i]);
    for (float x : v) sink += x;
  }
  const double elapsed = sw.seconds(), cpu = cpu_seconds() - cpu0;
  if (sink == 12345.678f) std::puts("");  // keeps the chains alive
  return {flops / elapsed / 1e9, cpu > 0 ? flops / cpu / 1e9 : 0.0};
}
#endif

// 4-wide multiply-add chains in plain C++ (SSE on baseline x86-64).
Peak peak_generic(double seconds) {
  constexpr int kWidth = 4;
  double flops = 0.0;
  float sink = 0.0f;
  Stopwatch sw;
  const double cpu0 = cpu_seconds();
  float acc[kChains][kWidth];
  for (int i = 0; i < kChains; ++i)
    for (int j = 0; j < kWidth; ++j) acc[i][j] = 0.001f * static_cast<float>(i + j);
  while (sw.seconds() < seconds) {
    for (long it = 0; it < kInner; ++it)
      for (int i = 0; i < kChains; ++i)
        for (int j = 0; j < kWidth; ++j) acc[i][j] = acc[i][j] * 0.999999f + 1e-7f;
    flops += 2.0 * kWidth * kChains * static_cast<double>(kInner);
  }
  for (auto& row : acc)
    for (float x : row) sink += x;
  const double elapsed = sw.seconds(), cpu = cpu_seconds() - cpu0;
  if (sink == 12345.678f) std::puts("");  // keeps the chains alive
  return {flops / elapsed / 1e9, cpu > 0 ? flops / cpu / 1e9 : 0.0};
}

}  // namespace

Peak measure_peak(double seconds) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return peak_avx2_fma(seconds);
#endif
  return peak_generic(seconds);
}

void add_peak_command(CLI::App& app, Action& action) {
  auto seconds = std::make_shared<double>(2.0);
  auto* cmd = cli::add_command(app, action, "peak", "measure this core's fp32 FMA peak (GFLOP/s)",
                               seconds, [](double s) {
                                 const Peak p = measure_peak(s);
                                 std::puts(nlohmann::json({{"bench", "peak"},
                                                           {"gflops_per_core", p.gflops},
                                                           {"gflops_per_cpu_s", p.cpu_gflops}})
                                               .dump(2)
                                               .c_str());
                                 return 0;
                               });
  cmd->add_option("--seconds", *seconds, "measuring time")
      ->capture_default_str()
      ->check(dbs::cli::above(0));
}

}  // namespace dbs::bench
