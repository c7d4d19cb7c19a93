// Synthetic traces: a cluster described by a small JSON spec (node types and their speeds, noise,
// disturbances, network) is simulated under a policy and written as a dbs-trace, so replay can
// answer questions about clusters one does not have. The spec format is in traces/README.md.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lib/policy/plan.h"
#include "lib/replay/model.h"

namespace dbs::replay {

// `count` ranks of one kind: a step of b samples costs one alpha_s + b / throughput seconds.
struct NodeType {
  std::string name;
  int count = 1;
  double throughput = 0;  // samples/s: 1 / beta, the seconds a sample adds to a step
  double alpha_s = 0;     // seconds of every step whatever its batch
};

struct Spec {
  int epochs = 0;
  // The policy the synthetic run records, with N = 60000 and B = 128 unless given.
  policy::Settings settings{"dbs", 128, 60000};
  std::int64_t params = 690590;  // model size: 4 bytes each in every allreduce
  double latency_s = 20e-6;      // ring allreduce latency per message
  double bandwidth = 1.25e9;     // bytes/s (0 = infinite)
  double overhead_s = 1e-3;      // per step
  double noise = 0;              // sd of log throughput, drawn per rank and epoch
  std::uint64_t seed = 1;
  std::vector<NodeType> nodes;  // ranks in this order
  std::vector<Disturbance> slowdowns;
  nlohmann::json source;  // the spec as given (copied into the header)

  int world() const;
};

// Throws InputError naming `name` and the field on anything invalid.
Spec parse_spec(const nlohmann::json& spec, const std::string& name);
Spec read_spec(const std::string& path);

// The ground truth the spec describes (noise drawn from the seed) and its cost model.
Cluster cluster_of(const Spec& spec);
CostModel cost_of(const Spec& spec);

// The trace of the spec's cluster trained under the spec's policy: header, plans, disturbance,
// rank and eval records as dbs-agent writes them (no loss or accuracy: there is no model).
// Figures are rounded to 7 significant digits to keep big traces small.
std::string synthesize(const Spec& spec);

}  // namespace dbs::replay
