// `dbs-scheduler bed`: a cluster spec run for real on the cluster test bed
// (tests/cluster/cluster.sh). It prints shell settings: one node per rank of the spec, each
// node's CPU quota in proportion to its node type's throughput, each node's link at its rank's
// bandwidth, and the dbs-agent options that carry the spec's epochs, samples, batch, policy and
// its settings, and disturbances to the bed's study (lab/experiments/cluster_heterogeneity.sh)
// or a job script; comment lines say what of the spec a real node cannot carry.
#include "scheduler/command.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lib/common/cli.h"
#include "lib/common/error.h"
#include "lib/common/format.h"
#include "lib/replay/synth.h"
#include "lib/trace/disturbance.h"

namespace dbs::scheduler {
namespace {

using replay::Link;
using replay::NodeType;
using replay::Spec;

// The smallest CPU quota the bed gives a node: 1 ms of a 100 ms period.
constexpr double kMinQuota = 0.01;

struct BedOptions {
  std::string spec;    // the cluster spec
  double cores = 1.0;  // the quota of its fastest node type
};

// A link's rate in tc's terms: bits/s in the largest unit that keeps it whole; 10gbit for a link
// the spec leaves unlimited (bandwidth 0).
std::string tc_rate(double bytes_per_s) {
  if (!(bytes_per_s > 0)) return "10gbit";
  const double bits = std::max(1.0, std::round(bytes_per_s * 8));
  constexpr std::array<std::pair<const char*, double>, 3> units{
      {{"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}}};
  for (const auto& [unit, size] : units) {
    if (bits >= size && std::fmod(bits, size) == 0) return format("%.0f%s", bits / size, unit);
  }
  return format("%.0fbit", bits);
}

// The values of a comma list the bed cycles: one value when every rank has the same.
std::string cycled(const std::vector<std::string>& values) {
  if (std::all_of(values.begin(), values.end(), [&](const auto& v) { return v == values[0]; }))
    return values[0];
  std::string out;
  for (const std::string& v : values) out += (out.empty() ? "" : ",") + v;
  return out;
}

bool sets(const Spec& spec, const char* field) {
  return spec.source.contains(field);
}

// The spec's fields that a node of the bed cannot carry, each with why.
std::vector<std::string> not_carried(const Spec& spec) {
  std::vector<std::string> out;
  if (std::any_of(spec.nodes.begin(), spec.nodes.end(),
                  [](const NodeType& t) { return t.alpha_s > 0; }))
    out.push_back("alpha_s: a node's quota slows its whole step, fixed cost and all");
  if (spec.noise > 0 || spec.step_noise > 0)
    out.push_back("noise, step_noise: a real node has its own");
  bool latency = sets(spec, "latency_s");
  if (spec.source.contains("network"))
    for (const auto& entry : spec.source["network"])
      latency = latency || entry.contains("latency_s");
  if (latency) out.push_back("latency_s: the bed's links limit the rate only (tc tbf)");
  if (sets(spec, "params") || sets(spec, "overhead_s"))
    out.push_back("params, overhead_s: the model trained on the bed has its own");
  if (sets(spec, "cpu_share")) out.push_back("cpu_share: emulation only");
  return out;
}

// Shell settings for the bed and its study; ConfigError where a node type's quota would be
// under kMinQuota.
std::string bed_settings(const Spec& spec, double cores) {
  DBS_CHECK(cores > 0);
  double fastest = 0;
  for (const NodeType& t : spec.nodes) fastest = std::max(fastest, t.throughput);
  std::string out = format(
      "# %s on the cluster test bed (tests/cluster/cluster.sh): a node per rank;\n"
      "# CPU quotas (cores) in proportion to the node types' throughputs, links at the ranks'\n"
      "# bandwidths.\n",
      spec.name.c_str());
  std::vector<std::string> quotas, rates;
  int node = 1;
  for (std::size_t k = 0; k < spec.nodes.size(); ++k) {
    const NodeType& t = spec.nodes[k];
    const double quota = cores * t.throughput / fastest;
    std::string what = format("nodes[%zu]", k);  // as the spec names it
    if (sets(spec, "speeds")) {
      what = format("speeds[%zu]", k);
    } else if (!t.name.empty()) {
      what += " '" + t.name + "'";
    }
    if (quota < kMinQuota) {
      throw ConfigError(format(
          "%s: %s would get a CPU quota of %.3g cores with the fastest at %g, under the bed's "
          "smallest, %g (give a larger --cores)",
          spec.name.c_str(), what.c_str(), quota, cores, kMinQuota));
    }
    const std::string range =
        t.count == 1 ? format("node%d", node) : format("node%d-node%d", node, node + t.count - 1);
    out += format("#   %s: %s, quota %.3g\n", range.c_str(), what.c_str(), quota);
    quotas.insert(quotas.end(), static_cast<std::size_t>(t.count), format("%.3g", quota));
    node += t.count;
  }
  for (const Link& l : spec.links) rates.push_back(tc_rate(l.bandwidth));
  for (const std::string& why : not_carried(spec)) out += "# not carried over: " + why + "\n";

  const Settings& p = spec.settings;
  // The whole run, for a job script of one's own too; the study appends its own --epochs and
  // --policy, which win.
  std::string options = format("--epochs %d --train-limit %lld --batch %d", spec.epochs,
                               static_cast<long long>(p.samples_per_epoch), p.global_batch);
  if (sets(spec, "policy")) options += " --policy " + to_string(p.policy);
  if (sets(spec, "min_batch")) options += format(" --min-batch %d", p.min_batch);
  if (sets(spec, "max_batch")) options += format(" --max-batch %d", p.max_batch);
  if (sets(spec, "min_gain")) options += format(" --min-gain %g", p.min_gain);
  if (sets(spec, "rebalance_every")) options += format(" --rebalance-every %d", p.rebalance_every);
  for (const trace::Disturbance& d : spec.slowdowns) options += " --disturb " + trace::to_string(d);

  out += format("export DBS_CLUSTER_NODES=%d\n", spec.world());
  out += "export DBS_CLUSTER_QUOTAS=" + cycled(quotas) + "\n";
  out += "export DBS_CLUSTER_RATES=" + cycled(rates) + "\n";
  out += format("export DBS_EPOCHS=%d\n", spec.epochs);
  if (sets(spec, "policy")) {
    const std::string policy = to_string(p.policy);
    out += "export DBS_POLICIES='static" + (policy == "static" ? "" : " " + policy) + "'\n";
  } else {
    out += "unset DBS_POLICIES\n";  // the study's own: static and dbs
  }
  out += "DBS_AGENT_OPTIONS='" + options + "'\n";
  return out;
}

int run(const BedOptions& o) {
  std::printf("%s", bed_settings(replay::read_spec(o.spec), o.cores).c_str());
  return 0;
}

}  // namespace

void add_bed_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<BedOptions>();
  auto* cmd = cli::add_command(
      app, action, "bed",
      "Print shell settings that run a cluster spec's cluster for real on the cluster test\n"
      "bed (tests/cluster/cluster.sh) and its study (lab/experiments/cluster_heterogeneity.sh):\n"
      "a node per rank, CPU quotas in proportion to the node types' speeds, link rates from\n"
      "the bandwidths, and the agent's options for the spec's run (epochs, samples, batch,\n"
      "policy, disturbances).\n"
      "Example: eval \"$(dbs-scheduler bed traces/bed-3.json)\"",
      o, run);
  cmd->add_option("spec", o->spec, "the cluster spec (JSON, the format of replay --synthesize)")
      ->required();
  cmd->add_option("--cores", o->cores,
                  "the CPU quota of the spec's fastest node type, cores (default 1)")
      ->check(dbs::cli::above(0.0));
}

}  // namespace dbs::scheduler
