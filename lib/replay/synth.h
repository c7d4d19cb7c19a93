// A cluster described by a small JSON spec (node types and their step costs, noise, disturbances,
// network): simulated under a policy and written as a dbs-trace (synthesize, for replay), or
// emulated by dbs-agent --model synthetic (lib/emulate), every rank waiting its step's cost. The
// spec format is in docs/reference/trace-format.md ("Synthetic traces: the spec format").
//
// Words: rank i's work in a step of b samples costs alpha_i + b / v_i(e) seconds, v_i(e) its
// throughput in epoch e (the node type's, times the epoch's noise draw; beta_i = 1 / v_i). A
// disturbance multiplies the whole cost by its factor while active; step_noise multiplies each
// step's by a lognormal factor of mean 1 (emulated: drawn per step; simulated: a step lasts the
// expected maximum of the ranks' times, Cluster::jitter).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lib/policy/cost.h"
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

// A rank's link in the ring allreduce model.
struct Link {
  double latency_s = 0;  // per message
  double bandwidth = 0;  // bytes/s (0 = infinite)
  bool operator==(const Link&) const = default;
};

struct Spec {
  int epochs = 0;
  // The policy the synthetic run records, with N = 60000 and B = 128 unless given.
  Settings settings{PolicySpec{}, 128, 60000};
  std::int64_t params = 690590;  // model size: 4 bytes each in every allreduce
  double latency_s = 20e-6;      // ring allreduce latency per message, of a rank's link
  double bandwidth = 1.25e9;     // bytes/s of a rank's link (0 = infinite)
  double overhead_s = 1e-3;      // per step (simulation only: an emulated step has its own)
  double noise = 0;              // sd of log throughput, drawn per rank and epoch
  double step_noise = 0;         // sd of log step cost, per rank and step
  double cpu_share = 0;          // part of a step's cost an emulated rank computes (the rest waits)
  std::uint64_t seed = 1;
  std::vector<NodeType> nodes;  // ranks in this order
  std::vector<Link> links;      // per rank: latency_s and bandwidth, or its network entry's
  std::vector<trace::Disturbance> slowdowns;
  nlohmann::json source;  // the spec as given (copied into the header)
  std::string name;       // the file it was read from, for messages

  int world() const;
  // The node type of rank `rank` (0 <= rank < world()).
  const NodeType& node_of(int rank) const;
  // The ring's pace: the largest latency and the smallest bandwidth of the ranks' links.
  Link slowest_link() const;
};

// Throws InputError naming `name` and the field on anything invalid.
Spec parse_spec(const nlohmann::json& spec, const std::string& name);
Spec read_spec(const std::string& path);

// The ground truth the spec describes (noise drawn from the seed) and its cost model.
Cluster cluster_of(const Spec& spec);
CostModel cost_of(const Spec& spec);

// Every rank's step cost in each epoch, outside disturbances and step noise: [epoch][rank]
// {alpha_i, 1 / v_i(e)}, v_i(e) the throughput cluster_of draws (the same draws).
std::vector<std::vector<policy::Cost>> costs_of(const Spec& spec);

// The trace of the spec's cluster trained under the spec's policy: header, plans, disturbance,
// rank and eval records as dbs-agent writes them (no loss or accuracy: there is no model).
// Figures are rounded to 7 significant digits to keep big traces small. A step of b samples costs
// rank i alpha_i + b / v_i (model.h).
std::string synthesize(const Spec& spec);

}  // namespace dbs::replay
