// splitmix64, the counter-based mixing every pseudo-random stream of dbs is built on (shuffles,
// initialisation, dropout masks), so each value depends only on its coordinates; and FNV-1a, the
// fingerprint of byte strings (plans, parameters) that ranks compare.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dbs {

inline constexpr std::uint64_t kSplitmixGamma = 0x9e3779b97f4a7c15ULL;  // the increment

// splitmix64's output function: a bijection on 64-bit words with full avalanche.
constexpr std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// One splitmix64 step from state z: mix64(z + gamma).
constexpr std::uint64_t splitmix64(std::uint64_t z) {
  return mix64(z + kSplitmixGamma);
}

inline constexpr std::uint64_t kFnvOffset = 0xcbf29ce484222325ULL;  // FNV-1a 64-bit basis

// 64-bit FNV-1a of n bytes at data, continuing from h (chain calls to hash several buffers).
inline std::uint64_t fnv1a(const void* data, std::size_t n, std::uint64_t h = kFnvOffset) {
  const auto* b = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 0x100000001b3ULL;
  return h;
}

}  // namespace dbs
