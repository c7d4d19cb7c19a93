// The plan the JSON form and the protocol round-trip in their tests: two ranks and every field
// set, its reason one that needs escaping (quotes, a backslash, a non-ASCII letter).
#pragma once

#include <dbs/plan.h>

namespace dbs::test {

inline Plan sample_plan() {
  Plan p;
  p.epoch = 3;
  p.global_batch = 128;
  p.batch = {85, 43};
  p.offset = {0, 85};
  p.throughput = {5000.25, 2512.125};
  p.predicted_epoch_s = 1.376;
  p.ideal_epoch_s = 1.3333333333333333;
  p.changed = true;
  p.reason = "rebalanced: \"quotes\" and \\ and unicode \xc3\xa9";
  return p;
}

}  // namespace dbs::test
