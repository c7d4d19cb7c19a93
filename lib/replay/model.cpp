#include "lib/replay/model.h"

namespace dbs::replay {

double ring_allreduce_s(int world, double bytes, double latency_s, double bandwidth) {
  if (world <= 1) return 0.0;
  const double hops = 2.0 * (world - 1);
  return hops * latency_s + (bandwidth > 0 ? hops / world * bytes / bandwidth : 0.0);
}

double allreduce_bytes(std::int64_t params, int world) {
  return 4.0 * static_cast<double>(params + 2 + 2 * static_cast<std::int64_t>(world));
}

}  // namespace dbs::replay
