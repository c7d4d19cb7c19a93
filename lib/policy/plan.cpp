#include "lib/policy/plan.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "lib/common/error.h"

namespace dbs {

PolicySpec parse_policy(std::string_view text) {
  const auto fail = [&](const std::string& what) {
    throw ConfigError("policy '" + std::string(text) + "': " + what);
  };
  PolicySpec p;
  if (text == "dbs" || text == "dbs-cost") return p;
  if (text == "dbs-rate") {
    p.kind = PolicySpec::Kind::dbs_rate;
    return p;
  }
  if (text == "static") {
    p.kind = PolicySpec::Kind::equal_split;
    return p;
  }
  if (!text.starts_with("fixed:"))
    throw ConfigError("unknown policy '" + std::string(text) +
                      "': expected dbs, dbs-rate, static or fixed:b0,b1,... (dbs-cost = dbs)");
  p.kind = PolicySpec::Kind::fixed;
  const std::string_view list = text.substr(6);
  for (std::size_t at = 0; at <= list.size();) {
    const std::size_t end = std::min(list.find(',', at), list.size());
    const std::string_view item = list.substr(at, end - at);
    int b = 0;
    const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), b);
    if (item.empty() || ec != std::errc{} || ptr != item.data() + item.size())
      fail("size " + std::to_string(p.sizes.size()) + " '" + std::string(item) +
           "' is not an integer");
    if (b <= 0)
      fail("size of rank " + std::to_string(p.sizes.size()) + " is " + std::to_string(b) +
           ", must be >= 1");
    p.sizes.push_back(b);
    at = end + 1;
  }
  return p;
}

std::string to_string(const PolicySpec& policy) {
  switch (policy.kind) {
    case PolicySpec::Kind::dbs:
      return "dbs";
    case PolicySpec::Kind::dbs_rate:
      return "dbs-rate";
    case PolicySpec::Kind::equal_split:
      return "static";
    case PolicySpec::Kind::fixed:
      break;
  }
  std::string out = "fixed:";
  for (std::size_t i = 0; i < policy.sizes.size(); ++i)
    out += (i > 0 ? "," : "") + std::to_string(policy.sizes[i]);
  return out;
}

std::vector<int> offsets_of(const std::vector<int>& batch) {
  std::vector<int> offset(batch.size());
  int at = 0;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    offset[i] = at;
    at += batch[i];
  }
  return offset;
}

}  // namespace dbs

namespace dbs::policy {

using nlohmann::json;

json to_json(const Plan& p) {
  json out = {{"epoch", p.epoch + 1},
              {"global_batch", p.global_batch},
              {"batch", p.batch},
              {"offset", p.offset},
              {"throughput", p.throughput},
              {"predicted_epoch_s", p.predicted_epoch_s},
              {"ideal_epoch_s", p.ideal_epoch_s},
              {"changed", p.changed},
              {"reason", p.reason}};
  if (p.exchange_epoch_s > 0) out["exchange_epoch_s"] = p.exchange_epoch_s;
  return out;
}

Plan plan_from_json(const Fields& f) {
  Plan p;
  p.epoch = f.integer("epoch", 1) - 1;
  p.global_batch = f.small("global_batch", 1);
  p.batch = f.ints("batch", 0);
  p.offset = f.ints("offset", 0);
  p.throughput = f.numbers("throughput", 0);
  p.predicted_epoch_s = f.number("predicted_epoch_s", 0);
  p.ideal_epoch_s = f.number("ideal_epoch_s", 0);
  p.exchange_epoch_s = f.number_or("exchange_epoch_s", 0, 0);
  p.changed = f.boolean("changed");
  p.reason = f.string("reason");
  if (p.batch.empty() || p.offset.size() != p.batch.size() || p.throughput.size() != p.batch.size())
    f.fail("plan has " + std::to_string(p.batch.size()) + " batch sizes, " +
           std::to_string(p.offset.size()) + " offsets and " + std::to_string(p.throughput.size()) +
           " throughputs");
  std::int64_t sum = 0;
  for (const int b : p.batch) sum += b;
  if (sum != p.global_batch)
    f.fail("plan batch sizes sum to " + std::to_string(sum) + ", not its global batch " +
           std::to_string(p.global_batch));
  if (p.offset != offsets_of(p.batch)) f.fail("plan offsets do not follow from its batch sizes");
  return p;
}

namespace {

// Report field "work": absent, or up to two [batch, steps, mean_s, sd_s] (CostPoint).
std::array<CostPoint, 2> work_from_json(const Fields& f) {
  std::array<CostPoint, 2> out{};
  if (!f.has("work")) return out;
  const json& w = f.need("work");
  if (!w.is_array() || w.size() > out.size())
    f.fail("field 'work' must be an array of at most 2 [batch, steps, mean_s, sd_s], got " +
           describe(w));
  for (std::size_t k = 0; k < w.size(); ++k) {
    const json& e = w[k];
    const auto bad = [&] {
      f.fail("field 'work' entry " + std::to_string(k) +
             " must be [batch in [1, 2^30], steps in [1, 2^40], mean_s and sd_s in [0, 1e9]]");
    };
    if (!e.is_array() || e.size() != 4) bad();
    for (const json& x : e)
      if (!x.is_number() || !(x.get<double>() >= 0) || !(x.get<double>() <= 1e9)) bad();
    if (!e[0].is_number_integer() || !e[1].is_number_integer()) bad();
    const std::int64_t b = e[0].get<std::int64_t>(), n = e[1].get<std::int64_t>();
    if (b < 1 || b > (1 << 30) || n < 1 || n > (std::int64_t{1} << 40)) bad();
    out[k] = {static_cast<int>(b), n, e[2].get<double>(), e[3].get<double>()};
  }
  return out;
}

}  // namespace

json to_json(const Report& r) {
  json out = {{"rank", r.rank},     {"epoch", r.epoch + 1},
              {"batch", r.batch},   {"samples", r.samples},
              {"steps", r.steps},   {"compute_s", r.compute_s},
              {"comm_s", r.comm_s}, {"step_rate_median", r.step_rate_median}};
  json work = json::array();
  for (const CostPoint& c : r.work)
    if (c.batch > 0) work.push_back({c.batch, c.steps, c.mean_s, c.sd_s});
  if (!work.empty()) out["work"] = std::move(work);
  return out;
}

Report report_from_json(const Fields& f) {
  Report r;
  r.rank = f.small("rank", 0);
  r.epoch = f.integer("epoch", 1) - 1;
  r.batch = f.small("batch", 0);
  r.samples = f.integer("samples", 0);
  r.steps = f.integer("steps", 0);
  r.compute_s = f.number("compute_s", 0);
  r.comm_s = f.number("comm_s", 0);
  r.step_rate_median = f.number("step_rate_median", 0);
  r.work = work_from_json(f);
  return r;
}

json to_json(const Settings& s) {
  json out = {{"policy", to_string(s.policy)},
              {"global_batch", s.global_batch},
              {"samples_per_epoch", s.samples_per_epoch},
              {"min_batch", s.min_batch},
              {"max_batch", s.max_batch},
              {"min_gain", s.min_gain},
              {"rebalance_every", s.rebalance_every}};
  if (s.average_every > 0) {
    out["average_every"] = s.average_every;
    out["average_after_epochs"] = s.average_after_epochs;
  }
  return out;
}

Settings settings_from_json(const Fields& f) {
  Settings s;
  try {
    s.policy = parse_policy(f.string("policy"));
  } catch (const ConfigError& e) {
    f.fail(std::string("field 'policy': ") + e.what());
  }
  s.global_batch = f.small("global_batch", 1);
  s.samples_per_epoch = f.integer("samples_per_epoch", 0);
  s.min_batch = f.small("min_batch", 1);
  s.max_batch = f.small("max_batch", 0);
  s.min_gain = f.number("min_gain");
  if (s.min_gain < 0 || s.min_gain >= 1)
    f.fail("field 'min_gain' must be a number in [0, 1), got " + describe(f.need("min_gain")));
  s.rebalance_every = static_cast<int>(f.integer_or("rebalance_every", 0, 0, 1 << 30));
  s.average_every = static_cast<int>(f.integer_or("average_every", 0, 0, 1 << 30));
  s.average_after_epochs = static_cast<int>(f.integer_or("average_after_epochs", 0, 0, 1 << 30));
  return s;
}

}  // namespace dbs::policy
