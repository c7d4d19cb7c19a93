#include "lib/trace/disturbance.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

namespace dbs::trace {
namespace {

double number(const std::string& spec, const std::string& key, const std::string& value) {
  char* end = nullptr;
  const double v = std::strtod(value.c_str(), &end);
  if (value.empty() || end != value.c_str() + value.size() || !std::isfinite(v))
    throw ConfigError("--disturb '" + spec + "': " + key + "=" + value + " is not a number");
  return v;
}

}  // namespace

const char* name(Disturbance::Mode mode) {
  return mode == Disturbance::Mode::sleep ? "sleep" : "hog";
}

Disturbance parse_disturbance(const std::string& spec) {
  Disturbance d;
  bool has_rank = false, has_factor = false;
  std::stringstream ss(spec);
  std::string item;
  const auto fail = [&spec](const std::string& what) {
    throw ConfigError("--disturb '" + spec + "': " + what);
  };
  while (std::getline(ss, item, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) fail("'" + item + "' is not key=value");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "rank") {
      const double r = number(spec, key, value);
      if (r < 0 || r != std::floor(r)) fail("rank must be a non-negative integer");
      d.rank = static_cast<int>(r);
      has_rank = true;
    } else if (key == "factor") {
      d.factor = number(spec, key, value);
      if (d.factor < 1.0) fail("factor must be >= 1");
      has_factor = true;
    } else if (key == "from") {
      d.from = number(spec, key, value);
      if (d.from < 1) fail("from must be >= 1 (epochs count from 1)");
    } else if (key == "to") {
      d.to = number(spec, key, value);
    } else if (key == "mode") {
      if (value != "sleep" && value != "hog")
        fail("mode must be sleep or hog, got '" + value + "'");
      d.mode = value == "sleep" ? Disturbance::Mode::sleep : Disturbance::Mode::hog;
    } else {
      fail("unknown key '" + key + "' (known: rank, factor, from, to, mode)");
    }
  }
  if (!has_rank || !has_factor) fail("rank= and factor= are required");
  if (d.to >= 0 && d.to <= d.from) fail("to must be greater than from");
  return d;
}

std::string to_string(const Disturbance& d) {
  std::ostringstream os;
  os << "rank=" << d.rank << ",factor=" << d.factor << ",from=" << d.from;
  if (d.to >= 0) os << ",to=" << d.to;
  os << ",mode=" << name(d.mode);
  return os.str();
}

nlohmann::json to_json(const Disturbance& d) {
  return {{"rank", d.rank},
          {"factor", d.factor},
          {"from", d.from},
          {"to", d.to},
          {"mode", name(d.mode)}};
}

Disturbance disturbance_from_json(const Fields& f, int world) {
  Disturbance d;
  d.rank = f.small("rank", 0, world - 1);
  d.factor = f.number("factor", 1);
  d.from = f.number_or("from", 1, 1);
  d.to = f.number_or("to", -1);
  const std::string mode = f.string_or("mode", "sleep", 16);
  if (mode != "sleep" && mode != "hog") f.fail("field 'mode' must be sleep or hog");
  d.mode = mode == "sleep" ? Disturbance::Mode::sleep : Disturbance::Mode::hog;
  if (d.to >= 0 && d.to <= d.from) f.fail("'to' must be after 'from' (or < 0: never)");
  return d;
}

}  // namespace dbs::trace
