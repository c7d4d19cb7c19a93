#include "lib/replay/replay.h"

#include <algorithm>
#include <cctype>

#include "lib/common/error.h"
#include "lib/common/format.h"

namespace dbs::replay {

double Replay::error() const {
  if (recorded < 0 || recorded_total_s <= 0) return 0.0;
  return (results[static_cast<std::size_t>(recorded)].total_s - recorded_total_s) /
         recorded_total_s;
}

std::vector<PolicySpec> split_policies(const std::string& list) {
  std::vector<PolicySpec> out;
  std::string item;
  const auto flush = [&] {
    const auto b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
    const std::string text = b == std::string::npos ? "" : item.substr(b, e - b + 1);
    if (!text.empty()) {
      const PolicySpec spec = parse_policy(text);
      if (std::find(out.begin(), out.end(), spec) == out.end()) out.push_back(spec);
    }
    item.clear();
  };
  for (std::size_t i = 0; i < list.size(); ++i) {
    const char ch = list[i];
    const bool continues_fixed = ch == ',' && item.find("fixed:") != std::string::npos &&
                                 i + 1 < list.size() &&
                                 std::isdigit(static_cast<unsigned char>(list[i + 1])) != 0;
    if (ch == ',' && !continues_fixed) {
      flush();
    } else {
      item += ch;
    }
  }
  flush();
  return out;
}

Replay replay(const Trace& trace, const ReplayOptions& options) {
  Replay r;
  r.path = trace.path;
  r.header = trace.header;
  std::vector<RankFit> ranks;
  r.cluster = cluster_from_trace(trace, &ranks);
  r.fit = fit_cost(trace, r.cluster, options.cost);
  r.fit.ranks = std::move(ranks);
  for (const EpochRecords& e : trace.epochs) {
    r.recorded_s.push_back(e.wall_s);
    r.recorded_total_s += e.wall_s;
  }

  const Settings& h = trace.header.settings;
  nlohmann::json given = policy::to_json(h);
  given.update(options.settings);
  Settings base;
  try {
    base = policy::settings_from_json(Fields(given, "replay settings"));
  } catch (const FieldError& e) {
    throw ConfigError(e.what());
  }
  base.policy = h.policy;
  // The simulation exchanges the gradient every step; an epoch that averaged the models makes
  // ceil(S / H) exchanges, and its reports' comm_s is per average: refused rather than
  // mispredicted.
  if (base.average_every > 0 && base.average_after_epochs < std::ssize(trace.epochs))
    throw InputError(format(
        "%s: the run averages the models every %d steps (average_every) from epoch %d; replay "
        "simulates synchronous training, a gradient exchange every step, and cannot replay it",
        trace.path.c_str(), base.average_every, base.average_after_epochs + 1));
  const bool as_recorded = base == h;

  std::vector<PolicySpec> specs = options.policies;
  if (specs.empty()) specs.push_back(h.policy);
  for (const PolicySpec& spec : specs) {
    Settings c = base;
    c.policy = spec;
    if (as_recorded && spec == h.policy && r.recorded < 0) {
      r.recorded = static_cast<int>(r.results.size());
    }
    r.results.push_back(simulate(r.cluster, r.fit.cost, c));
  }
  if (r.recorded >= 0) {
    const SimResult& mine = r.results[static_cast<std::size_t>(r.recorded)];
    for (std::size_t e = 0; e < trace.epochs.size(); ++e) {
      const std::vector<PlanAt>& a = mine.epochs[e].plans;
      const std::vector<PlanAt>& b = trace.epochs[e].plans;
      bool same = a.size() == b.size();
      for (std::size_t k = 0; same && k < a.size(); ++k) {
        same = a[k].step == b[k].step && a[k].plan.batch == b[k].plan.batch;
      }
      r.plans_matched += same ? 1 : 0;
    }
  }
  const auto is_static = [](const SimResult& x) {
    return x.config.policy.kind == PolicySpec::Kind::equal_split;
  };
  if (const auto it = std::find_if(r.results.begin(), r.results.end(), is_static);
      it != r.results.end()) {
    r.baseline = *it;
  } else {
    Settings c = base;
    c.policy = PolicySpec{PolicySpec::Kind::equal_split, {}};
    r.baseline = simulate(r.cluster, r.fit.cost, c);
  }
  return r;
}

}  // namespace dbs::replay
