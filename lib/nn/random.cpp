// The dropout stream: a counter-based generator, so a value depends only on its coordinates
// (seed, epoch, layer, sample id, element) and never on call order, thread or batch position.
#include "lib/nn/kernels.h"

namespace dbs::nn {
namespace {

// splitmix64's finaliser: a bijection on 64 bits with full avalanche.
std::uint64_t mix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

float dropout_uniform(const DropoutKey& key, std::int64_t sample_id, std::uint64_t element) {
  // Each coordinate is folded in and mixed in turn, so (a, b) and (b, a) differ.
  std::uint64_t h = mix(key.seed);
  h = mix(h ^ key.epoch);
  h = mix(h ^ key.layer);
  h = mix(h ^ static_cast<std::uint64_t>(sample_id));
  h = mix(h ^ element);
  // Top 24 bits: exactly representable in a float, so the result is in [0, 1) with no rounding.
  return static_cast<float>(h >> 40) * (1.0f / 16777216.0f);
}

}  // namespace dbs::nn
