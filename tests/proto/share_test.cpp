// lib/proto/share: the ranks rebuild the daemon's plan from their per-rank shares, and refuse
// it, all alike, unless every rank holds a share of the same plan.
#include "lib/proto/share.h"

#include <doctest/doctest.h>

#include <vector>

namespace {

using namespace dbs::proto;
using dbs::Plan;

Plan plan_of_3() {
  Plan p;
  p.epoch = 6;
  p.global_batch = 120;
  p.batch = {20, 40, 60};
  p.offset = {0, 20, 60};
  p.throughput = {1000, 2000, 3000.5};
  p.predicted_epoch_s = 1.25;
  p.ideal_epoch_s = 1.125;
  p.changed = true;
  p.reason = "rebalanced";
  return p;
}

std::vector<PlanMsg> messages_of(const Plan& p) {
  std::vector<PlanMsg> out;
  for (int r = 0; r < p.world(); ++r) out.push_back(share_of("j", p, r, plan_hash(p)));
  return out;
}

// What every rank decides from the allgathered shares of `messages`: the plan, or why not.
std::vector<std::string> verdicts(const std::vector<PlanMsg>& messages) {
  std::vector<Share> all;
  for (const PlanMsg& m : messages) all.push_back(share_of(m));
  std::vector<std::string> out;
  for (const PlanMsg& mine : messages) {
    std::string why;
    const auto p = assemble(mine, all, why);
    out.push_back(p ? (*p == plan_of_3() ? "the plan" : "another plan") : why);
  }
  return out;
}

}  // namespace

TEST_CASE("Share.EveryRankRebuildsTheWholePlan") {
  const std::vector<PlanMsg> m = messages_of(plan_of_3());
  CHECK(m[1].batch == 40);
  CHECK(m[1].offset == 20);
  CHECK(m[2].throughput == 3000.5);
  CHECK(verdicts(m) == std::vector<std::string>(3, "the plan"));
}

TEST_CASE("Share.HashCoversEveryField") {
  const Plan p = plan_of_3();
  std::vector<Plan> other(8, p);
  other[0].epoch = 7;
  other[1].batch = {21, 39, 60};
  other[2].offset = {0, 21, 60};
  other[3].throughput[2] = 3000.25;
  other[4].predicted_epoch_s = 1.5;
  other[5].ideal_epoch_s = 1;
  other[6].changed = false;
  other[7].reason = "rebalanced.";
  for (const Plan& o : other) CHECK(plan_hash(o) != plan_hash(p));
}

TEST_CASE("Share.RanksRefuseAllAlikeWhenTheyHoldDifferentPlans") {
  const std::string why = "ranks 2 lack the daemon's plan or hold another";
  std::vector<PlanMsg> m = messages_of(plan_of_3());
  m[2].hash = 0;  // rank 2 got no plan
  CHECK(verdicts(m) == std::vector<std::string>(3, why));

  m = messages_of(plan_of_3());
  Plan newer = plan_of_3();
  newer.epoch = 7;
  m[2] = messages_of(newer)[2];  // rank 2 holds the next epoch's plan
  CHECK(verdicts(m) == std::vector<std::string>(3, why));

  m = messages_of(plan_of_3());
  m[2].reason = "another reason";  // same hash, but not what was hashed
  CHECK(verdicts(m) == std::vector<std::string>(3, why));

  m = messages_of(plan_of_3());
  m[1].batch = 41;  // a share that does not add up to the hashed plan
  m[2].batch = 59;
  CHECK(verdicts(m) == std::vector<std::string>(
                           3, "the daemon's plan shares do not add up to the plan it hashed"));
}
