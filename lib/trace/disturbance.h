// An injected slowdown of one rank (docs/concepts/architecture.md, "Disturbance"): what the agent's
// --disturb asks for, what the trace records as ground truth and what replay simulates. Epochs
// count from 1, as everywhere users see them, and are fractional: from=2.5 starts halfway through
// the second epoch; to is exclusive (< 0: until the end).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "lib/common/fields.h"

namespace dbs::trace {

struct Disturbance {
  enum class Mode { sleep, hog };  // sleep (factor - 1) x the step's compute; or busy threads
  int rank = 0;
  double factor = 1.0;  // the rank runs `factor` times slower
  double from = 1.0;    // epoch (1-based, fractional) it starts, inclusive
  double to = -1.0;     // epoch (1-based, fractional) it stops, exclusive; < 0 = never
  Mode mode = Mode::sleep;

  // progress is 1-based: 1.0 is the start of the first epoch.
  bool active_at(double progress) const { return progress >= from && (to < 0 || progress < to); }
  // Active during some part of epoch `epoch` (0-based): it is then in that epoch's records.
  bool overlaps(std::int64_t epoch) const {
    const auto e = static_cast<double>(epoch + 1);
    return from < e + 1 && (to < 0 || to > e);
  }
  bool operator==(const Disturbance&) const = default;
};

// "rank=R,factor=F[,from=E][,to=E][,mode=sleep|hog]"; throws ConfigError naming the spec and
// the bad field. to_string writes the same form.
Disturbance parse_disturbance(const std::string& spec);
std::string to_string(const Disturbance& d);
const char* name(Disturbance::Mode mode);

// The JSON form: {"rank", "factor", "from", "to", "mode"}; the reader takes from, to and mode
// as optional (1, -1, sleep) and checks rank against world. Throws FieldError.
nlohmann::json to_json(const Disturbance& d);
Disturbance disturbance_from_json(const Fields& fields, int world);

}  // namespace dbs::trace
