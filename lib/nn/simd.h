// Which build of the fast kernels runs. lib/nn/fast_*.cpp are compiled once for baseline x86-64
// and, when the compiler can, once more for AVX2 + FMA; the first call of a fast kernel picks the
// best one this CPU supports, so one binary runs on every node of a mixed cluster.
#pragma once

#include <string>
#include <vector>

namespace dbs::nn {

// The kernels in use: "avx2+fma", "x86-64" (or "native" with -Dnative=true).
std::string simd_in_use();

// The kernels built into this binary that this CPU can run, best first.
std::vector<std::string> simd_supported();

// Selects the kernels: "auto" (the best supported) or a name from simd_supported(). Throws
// ConfigError naming the choices otherwise. Call before training starts (not thread-safe
// against running kernels).
void use_simd(const std::string& name);

}  // namespace dbs::nn
