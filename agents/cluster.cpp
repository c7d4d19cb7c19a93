#include "agents/cluster.h"

#include <cstdio>
#include <sstream>
#include <type_traits>
#include <vector>

#include "lib/common/error.h"

namespace dbs::agent {
namespace {

std::string text(const PolicySpec& v) {
  return to_string(v);
}
template <typename T>
std::string text(const T& v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// The spec's `field` applies to `value` unless `option` was given; given with another value,
// a conflict.
template <typename T>
void take(const nlohmann::json& spec, const char* field, const T& from_spec, T& value,
          const char* option, const std::function<bool(const char*)>& given,
          const std::string& path) {
  if (!spec.contains(field)) return;
  if (!given(option)) {
    value = from_spec;
  } else if (value != from_spec) {
    throw ConfigError(std::string(option) + " " + text(value) + " contradicts the cluster spec " +
                      path + ", whose '" + field + "' is " + text(from_spec) + " (give one)");
  }
}

}  // namespace

void apply_cluster(Options& o, const std::function<bool(const char*)>& given) {
  train::Config& c = o.train;
  if (c.model != "synthetic") {
    if (!o.cluster_path.empty())
      throw ConfigError("--cluster " + o.cluster_path + " needs --model synthetic");
    return;
  }
  if (o.cluster_path.empty()) throw ConfigError("--model synthetic needs --cluster SPEC");
  for (const char* option : {"--data", "--train-subset", "--test-limit", "--disturb"}) {
    if (given(option))
      throw ConfigError(std::string(option) +
                        " does not go with --model synthetic: the cluster spec " + o.cluster_path +
                        " gives its " +
                        (std::string(option) == "--disturb" ? "disturbances ('disturbances')"
                                                            : "samples ('samples_per_epoch')"));
  }
  replay::Spec s = replay::read_spec(o.cluster_path);
  const nlohmann::json& j = s.source;
  const std::string& path = o.cluster_path;
  const Settings& p = s.settings;
  take(j, "epochs", s.epochs, c.epochs, "--epochs", given, path);
  auto n = static_cast<std::size_t>(p.samples_per_epoch);
  if (given("--train-limit") && !j.contains("samples_per_epoch")) n = c.train_limit;
  take(j, "samples_per_epoch", n, c.train_limit, "--train-limit", given, path);
  if (n == 0) throw ConfigError("--train-limit 0: an emulated epoch needs samples");
  c.train_limit = 0;  // every sample of the workload's n
  take(j, "global_batch", p.global_batch, c.global_batch, "--batch", given, path);
  take(j, "policy", p.policy, c.policy, "--policy", given, path);
  take(j, "min_batch", p.min_batch, c.min_batch, "--min-batch", given, path);
  take(j, "max_batch", p.max_batch, c.max_batch, "--max-batch", given, path);
  take(j, "min_gain", p.min_gain, c.min_gain, "--min-gain", given, path);
  take(j, "rebalance_every", p.rebalance_every, c.rebalance_every, "--rebalance-every", given,
       path);
  s.epochs = c.epochs;
  s.settings = train::settings_of(c, n);
  c.disturbances = s.slowdowns;
  c.synthetic = j;
  o.cluster = std::move(s);
  if (!given("--wait")) c.wait = "sleep";
  if (!given("--threads") && o.threads_from.empty()) {
    c.threads = 1;
    o.threads_from = "--model synthetic";
  }
}

void check_world(const replay::Spec& spec, const std::string& path, int world) {
  if (spec.world() == world) return;
  throw ConfigError("--cluster " + path + ": the spec has " + std::to_string(spec.world()) +
                    " rank(s) ('nodes' counts, or 'speeds'), the job " + std::to_string(world));
}

void log_pace(comm::Communicator& comm, const emulate::Pace& mine) {
  static_assert(std::is_trivially_copyable_v<emulate::Pace>);
  std::vector<emulate::Pace> all(static_cast<std::size_t>(comm.size()));
  comm.allgather_bytes(&mine, sizeof mine, all.data());
  if (comm.rank() != 0) return;
  emulate::Pace sum;
  double latest = 0;  // the largest mean lateness of a rank, seconds per step
  for (const emulate::Pace& p : all) {
    sum.steps += p.steps;
    sum.requested_s += p.requested_s;
    sum.taken_s += p.taken_s;
    sum.late_s += p.late_s;
    sum.cpu_s += p.cpu_s;
    if (p.steps > 0) latest = std::max(latest, p.late_s / static_cast<double>(p.steps));
  }
  const double steps = static_cast<double>(std::max<std::int64_t>(sum.steps, 1));
  std::printf(
      "emulation: %lld steps on %d ranks; asked %.3f s, took %.3f s (%+.2f%%); wake-ups "
      "late by %.0f us a step (the latest rank %.0f us); %.2f s CPU\n",
      static_cast<long long>(sum.steps), comm.size(), sum.requested_s, sum.taken_s,
      sum.requested_s > 0 ? 100.0 * (sum.taken_s / sum.requested_s - 1.0) : 0.0,
      1e6 * sum.late_s / steps, 1e6 * latest, sum.cpu_s);
  std::fflush(stdout);
}

}  // namespace dbs::agent
