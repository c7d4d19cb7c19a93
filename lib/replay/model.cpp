#include "lib/replay/model.h"

#include <cmath>

#include "lib/common/error.h"

namespace dbs::replay {

const char* to_string(Allreduce a) {
  return a == Allreduce::tree ? "tree" : "ring";
}

Allreduce parse_allreduce(const std::string& name) {
  if (name == "ring") return Allreduce::ring;
  if (name == "tree") return Allreduce::tree;
  throw ConfigError("allreduce model '" + name + "': expected ring or tree");
}

double allreduce_messages(Allreduce algorithm, int world) {
  if (world <= 1) return 0.0;
  if (algorithm == Allreduce::tree) return 2.0 * std::ceil(std::log2(static_cast<double>(world)));
  return 2.0 * (world - 1);
}

double allreduce_volume(Allreduce algorithm, int world) {
  if (world <= 1 || algorithm == Allreduce::tree) return allreduce_messages(algorithm, world);
  return 2.0 * (world - 1) / world;
}

double allreduce_s(Allreduce algorithm, int world, double bytes, double latency_s,
                   double bandwidth) {
  if (world <= 1) return 0.0;
  return allreduce_messages(algorithm, world) * latency_s +
         (bandwidth > 0 ? allreduce_volume(algorithm, world) * bytes / bandwidth : 0.0);
}

double ring_allreduce_s(int world, double bytes, double latency_s, double bandwidth) {
  return allreduce_s(Allreduce::ring, world, bytes, latency_s, bandwidth);
}

double tree_allreduce_s(int world, double bytes, double latency_s, double bandwidth) {
  return allreduce_s(Allreduce::tree, world, bytes, latency_s, bandwidth);
}

double allreduce_bytes(std::int64_t params, int world) {
  return 4.0 * static_cast<double>(params + 2 + 2 * static_cast<std::int64_t>(world));
}

}  // namespace dbs::replay
