#include "lib/replay/synth.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <numbers>
#include <random>
#include <sstream>

#include "lib/common/error.h"
#include "lib/common/fields.h"
#include "lib/replay/simulate.h"
#include "lib/trace/trace.h"

namespace dbs::replay {
namespace {

using nlohmann::json;

constexpr double kHuge = std::numeric_limits<double>::max();
constexpr std::int64_t kMaxRanks = 10'000'000;

// x rounded to `digits` significant decimal digits (the nearest double to that decimal).
double round_sig(double x, int digits) {
  if (x == 0 || !std::isfinite(x)) return x;
  const int exp10 = digits - 1 - static_cast<int>(std::floor(std::log10(std::fabs(x))));
  if (exp10 >= 0) {
    const double scale = std::pow(10.0, exp10);
    return std::round(x * scale) / scale;
  }
  const double scale = std::pow(10.0, -exp10);
  return std::round(x / scale) * scale;
}

// A standard normal deviate from two draws of rng (Box-Muller): the same on every platform,
// unlike std::normal_distribution.
double normal(std::mt19937_64& rng) {
  const auto uniform = [&rng] { return (static_cast<double>(rng() >> 11) + 1.0) * 0x1p-53; };
  const double u1 = uniform(), u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

// A cost field of a node type: a finite number > 0.
double positive(const Fields& node, const char* key) {
  const double v = node.number(key);
  if (!(v > 0))
    node.fail(std::string("field '") + key + "' must be a finite number > 0, got " +
              node.need(key).dump());
  return v;
}

std::vector<NodeType> parse_nodes(const Fields& f, const std::string& name, std::int64_t n) {
  const double base = f.number_or("base_throughput", 1000.0, 1e-300, kHuge);
  std::vector<NodeType> out;
  if (f.has("speeds") == f.has("nodes")) f.fail("give exactly one of 'nodes' and 'speeds'");
  if (f.has("speeds")) {
    for (const double s : f.numbers("speeds", 1e-300, kHuge))
      out.push_back({"rank", 1, s * base, 0});
    if (out.empty()) f.fail("'speeds' is not a non-empty array");
    return out;
  }
  const json& nodes = f.need("nodes");
  if (!nodes.is_array() || nodes.empty()) f.fail("'nodes' is not a non-empty array");
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    const Fields node(nodes[k], name + ": nodes[" + std::to_string(k) + "]");
    node.only({"name", "count", "speed", "throughput", "epoch_s", "beta_s", "alpha_s"});
    NodeType t;
    t.name = node.string_or("name", "node" + std::to_string(k));
    t.count = static_cast<int>(node.integer_or("count", 1, 1, kMaxRanks));
    const int given = int{node.has("speed")} + int{node.has("throughput")} +
                      int{node.has("epoch_s")} + int{node.has("beta_s")};
    if (given != 1) node.fail("give exactly one of 'speed', 'throughput', 'epoch_s' and 'beta_s'");
    if (node.has("speed")) t.throughput = positive(node, "speed") * base;
    if (node.has("throughput")) t.throughput = positive(node, "throughput");
    if (node.has("epoch_s")) t.throughput = static_cast<double>(n) / positive(node, "epoch_s");
    if (node.has("beta_s")) t.throughput = 1.0 / positive(node, "beta_s");
    if (!std::isfinite(t.throughput) || t.throughput <= 0)
      node.fail("the cost gives no finite throughput");
    t.alpha_s = node.number_or("alpha_s", 0, 0, kHuge);
    out.push_back(t);
  }
  return out;
}

// The ranks an entry names: "rank": R, or "ranks": [R, ...] or "first-last" (inclusive), each
// in [0, world); at least one.
std::vector<int> ranks_of(const Fields& d, int world) {
  if (d.has("rank") == d.has("ranks")) d.fail("give exactly one of 'rank' and 'ranks'");
  std::vector<int> ranks;
  if (d.has("rank")) {
    ranks.push_back(d.small("rank", 0, world - 1));
  } else if (d.need("ranks").is_string()) {
    const std::string r = d.string("ranks");
    int first = -1, last = -1;
    char tail = 0;
    if (std::sscanf(r.c_str(), "%d-%d%c", &first, &last, &tail) != 2 || first < 0 || last < first ||
        last >= world) {
      d.fail("'ranks' \"" + r + "\" is not a range first-last within 0-" +
             std::to_string(world - 1));
    }
    for (int i = first; i <= last; ++i) ranks.push_back(i);
  } else {
    ranks = d.ints("ranks", 0, world - 1);
  }
  if (ranks.empty()) d.fail("'ranks' names no rank");
  return ranks;
}

// The entries of the optional array `key`, each named "<name>: <key>[k]" in messages.
std::vector<Fields> entries(const Fields& f, const std::string& name, const char* key) {
  std::vector<Fields> out;
  if (!f.has(key)) return out;
  const json& list = f.need(key);
  if (!list.is_array()) f.fail(std::string("'") + key + "' is not an array");
  for (std::size_t k = 0; k < list.size(); ++k)
    out.emplace_back(list[k], name + ": " + key + "[" + std::to_string(k) + "]");
  return out;
}

// Every rank's link: latency_s and bandwidth, or the last network entry naming the rank.
std::vector<Link> parse_links(const Fields& f, const std::string& name, const Link& all,
                              int world) {
  std::vector<Link> out(static_cast<std::size_t>(world), all);
  for (const Fields& e : entries(f, name, "network")) {
    e.only({"rank", "ranks", "latency_s", "bandwidth", "comment"});
    if (!e.has("latency_s") && !e.has("bandwidth"))
      e.fail("give 'latency_s' or 'bandwidth' (or both)");
    const Link link{e.number_or("latency_s", all.latency_s, 0, kHuge),
                    e.number_or("bandwidth", all.bandwidth, 0, kHuge)};
    for (const int r : ranks_of(e, world)) out[static_cast<std::size_t>(r)] = link;
  }
  return out;
}

std::vector<trace::Disturbance> parse_slowdowns(const Fields& f, const std::string& name,
                                                int world) {
  std::vector<trace::Disturbance> out;
  for (const Fields& d : entries(f, name, "disturbances")) {
    d.only({"rank", "ranks", "factor", "from", "to"});
    const std::vector<int> ranks = ranks_of(d, world);
    json one = d.value();  // the disturbance form, with rank 0 standing in for the list
    one.erase("ranks");
    one["rank"] = 0;
    trace::Disturbance s = trace::disturbance_from_json(Fields(one, d.where()), world);
    for (const int r : ranks) {
      s.rank = r;
      out.push_back(s);
    }
  }
  return out;
}

}  // namespace

int Spec::world() const {
  std::int64_t n = 0;
  for (const NodeType& t : nodes) n += t.count;
  return static_cast<int>(n);
}

const NodeType& Spec::node_of(int rank) const {
  DBS_CHECK(rank >= 0 && rank < world());
  for (const NodeType& t : nodes) {
    if (rank < t.count) return t;
    rank -= t.count;
  }
  DBS_CHECK(false);
  return nodes.back();
}

Link Spec::slowest_link() const {
  Link out{0, 0};
  bool finite = false;  // some link has a bandwidth
  for (const Link& l : links) {
    out.latency_s = std::max(out.latency_s, l.latency_s);
    if (l.bandwidth > 0) {
      out.bandwidth = finite ? std::min(out.bandwidth, l.bandwidth) : l.bandwidth;
      finite = true;
    }
  }
  return out;
}

Spec parse_spec(const json& j, const std::string& name) {
  const Fields f(j, name + ": synthetic spec");
  f.only({"epochs",       "samples_per_epoch",
          "global_batch", "policy",
          "min_batch",    "max_batch",
          "min_gain",     "rebalance_every",
          "params",       "latency_s",
          "bandwidth",    "network",
          "overhead_s",   "noise",
          "step_noise",   "cpu_share",
          "seed",         "base_throughput",
          "speeds",       "nodes",
          "disturbances", "comment"});
  Spec s;
  s.epochs = static_cast<int>(f.integer("epochs", 1, 1'000'000));
  Settings& p = s.settings;
  p.samples_per_epoch =
      f.integer_or("samples_per_epoch", p.samples_per_epoch, 1, 1'000'000'000'000);
  p.global_batch = static_cast<int>(f.integer_or("global_batch", p.global_batch, 1, 1 << 30));
  try {
    p.policy = parse_policy(f.string_or("policy", to_string(p.policy)));
  } catch (const ConfigError& e) {
    f.fail(std::string("field 'policy': ") + e.what());
  }
  p.min_batch = static_cast<int>(f.integer_or("min_batch", p.min_batch, 1, 1 << 30));
  p.max_batch = static_cast<int>(f.integer_or("max_batch", p.max_batch, 0, 1 << 30));
  p.min_gain = f.number_or("min_gain", p.min_gain, 0, 0.999);
  p.rebalance_every = static_cast<int>(f.integer_or("rebalance_every", 0, 0, 1 << 30));
  s.params = f.integer_or("params", s.params, 0, 1'000'000'000'000);
  s.latency_s = f.number_or("latency_s", s.latency_s, 0, kHuge);
  s.bandwidth = f.number_or("bandwidth", s.bandwidth, 0, kHuge);
  s.overhead_s = f.number_or("overhead_s", s.overhead_s, 0, kHuge);
  s.noise = f.number_or("noise", 0, 0, 10);
  s.step_noise = f.number_or("step_noise", 0, 0, 10);
  s.cpu_share = f.number_or("cpu_share", 0, 0, 1);
  s.seed = static_cast<std::uint64_t>(f.integer_or("seed", 1, 0, kMaxRanks * 1000));
  s.nodes = parse_nodes(f, name, p.samples_per_epoch);
  const std::int64_t world = s.world();
  if (world > kMaxRanks) f.fail("more than " + std::to_string(kMaxRanks) + " ranks");
  if (world * p.min_batch > p.global_batch) {
    f.fail(std::to_string(world) + " ranks x min_batch " + std::to_string(p.min_batch) +
           " do not fit in global_batch " + std::to_string(p.global_batch));
  }
  s.slowdowns = parse_slowdowns(f, name, static_cast<int>(world));
  s.links = parse_links(f, name, {s.latency_s, s.bandwidth}, static_cast<int>(world));
  s.source = j;
  s.name = name;
  return s;
}

Spec read_spec(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot open spec: " + std::strerror(errno));
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    throw InputError(path + ": not valid JSON: " + json_message(e));
  }
  return parse_spec(j, path);
}

Cluster cluster_of(const Spec& s) {
  Cluster c;
  c.world = s.world();
  c.global_batch = s.settings.global_batch;
  c.samples_per_epoch = s.settings.samples_per_epoch;
  c.slowdowns = s.slowdowns;
  std::vector<double> speed;
  for (const NodeType& t : s.nodes) speed.insert(speed.end(), t.count, t.throughput);
  std::mt19937_64 rng(s.seed);
  c.base.assign(static_cast<std::size_t>(s.epochs), speed);
  if (s.noise > 0) {
    for (std::vector<double>& v : c.base) {
      for (double& x : v) x *= std::exp(s.noise * normal(rng));
    }
  }
  std::vector<double> alpha;
  for (const NodeType& t : s.nodes) alpha.insert(alpha.end(), t.count, t.alpha_s);
  const bool fixed = std::any_of(alpha.begin(), alpha.end(), [](double a) { return a > 0; });
  if (fixed) c.alpha.assign(c.base.size(), alpha);
  // Per-step noise: each step lasts the expected maximum of the ranks' noisy times.
  if (s.step_noise > 0)
    c.jitter.assign(c.base.size(),
                    std::vector<double>(static_cast<std::size_t>(c.world), s.step_noise));
  if (fixed || s.step_noise > 0) {
    // The ranks report their work times (mean and spread), as the agent's do, so that dbs plans
    // by its cost model and replay can fit the fixed cost and the noise back.
    const Cluster::WorkBias reported{true, {1.0, 1.0}, {s.step_noise, s.step_noise}};
    c.work_bias.assign(c.base.size(),
                       std::vector<Cluster::WorkBias>(static_cast<std::size_t>(c.world), reported));
  }
  return c;
}

std::vector<std::vector<policy::Cost>> costs_of(const Spec& s) {
  const Cluster c = cluster_of(s);
  std::vector<std::vector<policy::Cost>> out(c.base.size());
  for (std::size_t e = 0; e < c.base.size(); ++e) {
    for (int i = 0; i < c.world; ++i)
      out[e].push_back({s.node_of(i).alpha_s, 1.0 / c.base[e][static_cast<std::size_t>(i)]});
  }
  return out;
}

CostModel cost_of(const Spec& s) {
  CostModel m;
  const Link ring = s.slowest_link();
  m.latency_s = ring.latency_s;
  m.bandwidth = ring.bandwidth;
  m.bytes = allreduce_bytes(s.params, s.world());
  m.allreduce_s = ring_allreduce_s(s.world(), m.bytes, m.latency_s, m.bandwidth);
  m.overhead_s = s.overhead_s;
  return m;
}

std::string synthesize(const Spec& s) {
  const Cluster c = cluster_of(s);
  const SimResult r = simulate(c, cost_of(s), s.settings);
  json hosts = json::array(), disturb = json::array();
  for (const NodeType& t : s.nodes) {
    for (int k = 0; k < t.count; ++k) hosts.push_back(t.name + "-" + std::to_string(k));
  }
  for (const trace::Disturbance& d : s.slowdowns) disturb.push_back(to_string(d));
  const json config = trace::run_config(s.settings, c.world,
                                        {{"model", "synthetic"},
                                         {"params", s.params},
                                         {"hosts", hosts},
                                         {"threads", 0},
                                         {"epochs", s.epochs},
                                         {"optimizer", "none"},
                                         {"lr", 0},
                                         {"seed", s.seed},
                                         {"test_samples", 0},
                                         {"allreduce", "model"},
                                         {"disturb", disturb},
                                         {"synthetic", s.source}});
  const auto rounded = [](Plan p) {
    for (double& v : p.throughput) v = round_sig(v, 7);
    p.predicted_epoch_s = round_sig(p.predicted_epoch_s, 7);
    p.ideal_epoch_s = round_sig(p.ideal_epoch_s, 7);
    return p;
  };
  const auto line = [](const json& record) { return record.dump() + "\n"; };
  std::string out = line(trace::header(config));
  out += line(trace::plan_record(rounded(r.epochs.front().plans.front().plan), 0, "initial"));
  for (std::size_t e = 0; e < r.epochs.size(); ++e) {
    const EpochRun& run = r.epochs[e];
    const auto epoch = static_cast<std::int64_t>(e);
    for (const trace::Disturbance& d : s.slowdowns)
      if (d.overlaps(epoch)) out += line(trace::disturbance_record(d, epoch));
    for (std::size_t k = 1; k < run.plans.size(); ++k)
      out += line(trace::plan_record(rounded(run.plans[k].plan), run.plans[k].step, "rebalance"));
    std::vector<double> throughput;  // as written, rounded
    for (Report rep : run.reports) {
      rep.compute_s = round_sig(rep.compute_s, 7);
      rep.comm_s = round_sig(rep.comm_s, 7);
      rep.step_rate_median = round_sig(rep.step_rate_median, 7);
      json j = trace::rank_record(rep, hosts[static_cast<std::size_t>(rep.rank)]);
      j["throughput"] = round_sig(rep.throughput(), 7);
      throughput.push_back(j["throughput"].get<double>());
      out += line(j);
    }
    out += line(trace::eval_record(epoch, round_sig(run.time_s, 7),
                                   static_cast<double>(s.settings.samples_per_epoch), throughput,
                                   run.replans));
    out += line(trace::plan_record(rounded(run.next), 0, "embedded"));
  }
  return out;
}

}  // namespace dbs::replay
