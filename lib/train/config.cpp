#include "lib/train/config.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

#include "lib/common/error.h"

namespace dbs::train {
namespace {

double number(const std::string& spec, const std::string& key, const std::string& value) {
  char* end = nullptr;
  const double v = std::strtod(value.c_str(), &end);
  if (value.empty() || end != value.c_str() + value.size() || !std::isfinite(v))
    throw ConfigError("--disturb '" + spec + "': " + key + "=" + value + " is not a number");
  return v;
}

}  // namespace

Disturbance parse_disturbance(const std::string& spec) {
  Disturbance d;
  bool has_rank = false, has_factor = false;
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos)
      throw ConfigError("--disturb '" + spec + "': '" + item + "' is not key=value");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "rank") {
      const double r = number(spec, key, value);
      if (r < 0 || r != std::floor(r))
        throw ConfigError("--disturb '" + spec + "': rank must be a non-negative integer");
      d.rank = static_cast<int>(r);
      has_rank = true;
    } else if (key == "factor") {
      d.factor = number(spec, key, value);
      if (d.factor < 1.0) throw ConfigError("--disturb '" + spec + "': factor must be >= 1");
      has_factor = true;
    } else if (key == "from") {
      d.from = number(spec, key, value);
      if (d.from < 1) throw ConfigError("--disturb '" + spec + "': from must be >= 1 (epochs count from 1)");
    } else if (key == "to") {
      d.to = number(spec, key, value);
    } else if (key == "mode") {
      if (value == "sleep")
        d.mode = Disturbance::Mode::sleep;
      else if (value == "hog")
        d.mode = Disturbance::Mode::hog;
      else
        throw ConfigError("--disturb '" + spec + "': mode must be sleep or hog, got '" + value + "'");
    } else {
      throw ConfigError("--disturb '" + spec + "': unknown key '" + key +
                        "' (known: rank, factor, from, to, mode)");
    }
  }
  if (!has_rank || !has_factor)
    throw ConfigError("--disturb '" + spec + "': rank= and factor= are required");
  if (d.to >= 0 && d.to <= d.from)
    throw ConfigError("--disturb '" + spec + "': to must be greater than from");
  return d;
}

std::string to_string(const Disturbance& d) {
  std::ostringstream os;
  os << "rank=" << d.rank << ",factor=" << d.factor << ",from=" << d.from;
  if (d.to >= 0) os << ",to=" << d.to;
  os << ",mode=" << (d.mode == Disturbance::Mode::sleep ? "sleep" : "hog");
  return os.str();
}

policy::PolicyConfig policy_config(const Config& c, int world, std::size_t train_samples) {
  const std::size_t n =
      c.train_limit == 0 || c.train_limit >= train_samples ? train_samples : c.train_limit;
  policy::PolicyConfig pc;
  pc.world = world;
  pc.global_batch = c.global_batch;
  pc.samples_per_epoch = static_cast<std::int64_t>(n);
  pc.min_batch = c.min_batch;
  pc.max_batch = c.max_batch;
  pc.min_gain = c.min_gain;
  return pc;
}

}  // namespace dbs::train
