// splitmix64, the counter-based mixing every pseudo-random stream of dbs is built on (shuffles,
// initialisation, dropout masks), so each value depends only on its coordinates.
#pragma once

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
constexpr std::uint64_t splitmix64(std::uint64_t z) { return mix64(z + kSplitmixGamma); }

}  // namespace dbs
