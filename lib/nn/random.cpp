// The dropout stream: a counter-based generator, so a value depends only on its coordinates
// (seed, epoch, layer, sample id, element) and never on call order, thread or batch position.
#include "lib/common/hash.h"
#include "lib/nn/kernels.h"

namespace dbs::nn {

float dropout_uniform(const DropoutKey& key, std::int64_t sample_id, std::uint64_t element) {
  // Each coordinate is folded in and mixed in turn, so (a, b) and (b, a) differ.
  std::uint64_t h = splitmix64(key.seed);
  h = splitmix64(h ^ key.epoch);
  h = splitmix64(h ^ key.layer);
  h = splitmix64(h ^ static_cast<std::uint64_t>(sample_id));
  h = splitmix64(h ^ element);
  // Top 24 bits: exactly representable in a float, so the result is in [0, 1) with no rounding.
  return static_cast<float>(h >> 40) * (1.0f / 16777216.0f);
}

}  // namespace dbs::nn
