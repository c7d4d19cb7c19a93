// make_policy, the static and fixed policies, and the exact message of every rejected spec,
// config, report set and plan.
#include "lib/policy/policy.h"

#include <doctest/doctest.h>

#include <limits>
#include <string>
#include <vector>

#include "lib/common/error.h"
#include "tests/policy/cases.h"

namespace {

using dbs::ConfigError;
using dbs::InputError;
using namespace dbs;
using namespace dbs::policy;
using namespace dbs::policy::test;

std::string config_error(const std::string& spec, const JobSettings& c) {
  try {
    make_policy(spec, c);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

// The InputError message next() throws for reports r of a 4-rank dbs job ("" if none).
std::string input_error(const std::string& spec, const std::vector<Report>& r) {
  auto policy = make_policy(spec, config(4, 128));
  try {
    policy->next(policy->initial(), r);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

std::vector<Report> four() {
  return reports(make_policy("static", config(4, 128))->initial(), {100, 100, 100, 100}, true);
}

}  // namespace

TEST_CASE("Policy.Names") {
  CHECK(make_policy("dbs", config(2, 8))->name() == "dbs");
  CHECK(make_policy("dbs-rate", config(2, 8))->name() == "dbs-rate");
  CHECK(make_policy("static", config(2, 8))->name() == "static");
  CHECK(make_policy("fixed:5,3", config(2, 8))->name() == "fixed");
}

TEST_CASE("Static.EqualSplitRemainderToLowRanksNeverChanges") {
  auto policy = make_policy("static", config(3, 100));
  Plan p = policy->initial();
  CHECK(p.batch == std::vector<int>{34, 33, 33});
  CHECK(p.offset == std::vector<int>{0, 34, 67});
  CHECK(p.epoch == 0);
  CHECK(p.reason == "initial: equal split");
  for (int e = 0; e < 3; ++e) {
    const Plan next = policy->next(p, reports(p, {100, 10, 1000}, e == 0));
    CHECK(next.batch == p.batch);
    CHECK(next.epoch == p.epoch + 1);
    CHECK_FALSE(next.changed);
    CHECK(next.reason == "static: equal split");
    CHECK(next.throughput == std::vector<double>{100, 10, 1000});
    CHECK(next.predicted_epoch_s == doctest::Approx(600 * 3.3));  // 600 steps of 33 / 10 s
    p = next;
  }
}

TEST_CASE("Fixed.UsesGivenSizes") {
  auto policy = make_policy("fixed:96,32", config(2, 128));
  const Plan p = policy->initial();
  CHECK(p.batch == std::vector<int>{96, 32});
  CHECK(p.offset == std::vector<int>{0, 96});
  CHECK(p.reason == "initial: fixed sizes as given");
  const Plan next = policy->next(p, reports(p, {100, 100}, true));
  CHECK(next.batch == p.batch);
  CHECK_FALSE(next.changed);
  CHECK(next.reason == "fixed: sizes as given");
}

TEST_CASE("Fixed.SpecErrorsNameSpecAndProblem") {
  const JobSettings c = config(2, 128);
  CHECK(config_error("fixed:96,32,0", c) ==
        "policy 'fixed:96,32,0': size of rank 2 is 0, must be >= 1");
  CHECK(config_error("fixed:96,-32", c) ==
        "policy 'fixed:96,-32': size of rank 1 is -32, must be >= 1");
  CHECK(config_error("fixed:64,64,64", c) == "policy 'fixed:64,64,64': 3 sizes for 2 ranks");
  CHECK(config_error("fixed:60,60", c) ==
        "policy 'fixed:60,60': sizes sum to 120, the global batch is 128");
  CHECK(config_error("fixed:96,x", c) == "policy 'fixed:96,x': size 1 'x' is not an integer");
  CHECK(config_error("fixed:96,32,", c) == "policy 'fixed:96,32,': size 2 '' is not an integer");
  CHECK(config_error("fixed:", c) == "policy 'fixed:': size 0 '' is not an integer");
}

TEST_CASE("Policy.ParsedOnceReadsBackItsName") {
  for (const char* name : {"dbs", "dbs-rate", "static", "fixed:96,32"})
    CHECK(to_string(parse_policy(name)) == name);
  CHECK(parse_policy("dbs-cost") == parse_policy("dbs"));  // the cost model's old name
  CHECK(parse_policy("fixed:96,32").kind == PolicySpec::Kind::fixed);
  CHECK(parse_policy("fixed:96,32").sizes == std::vector<int>{96, 32});
  CHECK(parse_policy("static").kind == PolicySpec::Kind::equal_split);
  CHECK(parse_policy("static").sizes.empty());
  CHECK_THROWS_WITH_AS(parse_policy("Dbs"),
                       "unknown policy 'Dbs': expected dbs, dbs-rate, static or fixed:b0,b1,... "
                       "(dbs-cost = dbs)",
                       ConfigError);
}

TEST_CASE("Policy.UnknownSpecAndBadConfig") {
  CHECK(config_error("dbs2", config(2, 8)) ==
        "unknown policy 'dbs2': expected dbs, dbs-rate, static or fixed:b0,b1,... (dbs-cost = dbs)");
  CHECK(config_error("dbs", config(0, 8)) == "policy config: world must be >= 1, got 0");
  CHECK(config_error("dbs", config(2, 8, 0)) == "policy config: min_batch must be >= 1, got 0");
  CHECK(config_error("dbs", config(4, 8, 3)) ==
        "policy config: 4 ranks with batch in [3, 8] cannot make a global batch of 8");
  CHECK(config_error("dbs", config(4, 100, 1, 20)) ==
        "policy config: 4 ranks with batch in [1, 20] cannot make a global batch of 100");
  CHECK(config_error("static", config(2, 8, 4, 3)) ==
        "policy config: max_batch must be 0 (= global batch) or >= min_batch 4, got 3");
  JobSettings c = config(2, 8);
  c.min_gain = std::numeric_limits<double>::quiet_NaN();
  CHECK(config_error("dbs", c) == "policy config: min_gain must be in [0, 1), got nan");
  c = config(2, 8);
  c.average_every = -1;
  CHECK(config_error("dbs", c) ==
        "policy config: average_every and average_after_epochs must be >= 0, got -1 and 0");
  c.average_every = 4;
  c.rebalance_every = 6;
  CHECK(config_error("static", c) ==
        "policy config: rebalance_every 6 is not a multiple of average_every 4 (the ranks learn "
        "each other's step times at the averages)");
  c.rebalance_every = 8;
  CHECK(config_error("dbs", c) == "no error");
}

// Which epochs average and how many exchanges an epoch makes: every step while synchronous,
// after every H-th step and the last one from average_after_epochs on.
TEST_CASE("Settings.Averaging.ExchangesPerEpoch") {
  Settings s;
  CHECK_FALSE(s.averages_in(0));
  CHECK(s.exchanges(3, 24) == 24);
  s.average_every = 8;
  s.average_after_epochs = 2;
  CHECK_FALSE(s.averages_in(1));
  CHECK(s.averages_in(2));
  CHECK(s.exchanges(1, 24) == 24);
  CHECK(s.exchanges(2, 24) == 3);
  CHECK(s.exchanges(2, 25) == 4);  // the last step's average ends the epoch
  s.average_every = 1;
  CHECK(s.exchanges(5, 24) == 24);
}

TEST_CASE("Policy.Validate.RanksExactlyOnce") {
  for (const std::string spec : {"dbs", "static", "fixed:32,32,32,32"}) {
    CAPTURE(spec);
    std::vector<Report> r = four();
    r[2].rank = 5;
    CHECK(input_error(spec, r) == "report for rank 5 but the job has 4 ranks");
    r[2].rank = -1;
    CHECK(input_error(spec, r) == "report for rank -1 but the job has 4 ranks");
    r[2].rank = 1;
    CHECK(input_error(spec, r) == "two reports for rank 1");
    r.pop_back();
    r[2].rank = 2;
    CHECK(input_error(spec, r) == "no report for rank 3 (3 reports for 4 ranks)");
    r = four();
    std::swap(r[0], r[3]);
    CHECK(input_error(spec, r) == "no error");  // any order
  }
}

TEST_CASE("Policy.Validate.FiguresFiniteAndNonNegative") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<Report> r = four();
  r[1].compute_s = nan;
  CHECK(input_error("dbs", r) == "report of rank 1: compute_s is NaN");
  r = four();
  r[1].comm_s = inf;
  CHECK(input_error("dbs", r) == "report of rank 1: comm_s is infinite");
  r = four();
  r[2].compute_s = -0.5;
  CHECK(input_error("dbs", r) == "report of rank 2: compute_s is negative (-0.5)");
  r = four();
  r[3].step_rate_median = -inf;
  CHECK(input_error("static", r) == "report of rank 3: step_rate_median is -infinite");
  r = four();
  r[0].samples = -3;
  CHECK(input_error("dbs", r) == "report of rank 0: samples is negative (-3)");
  r = four();
  r[0].steps = -1;
  CHECK(input_error("dbs", r) == "report of rank 0: steps is negative (-1)");
}

TEST_CASE("Policy.Validate.CurrentPlanMatchesJob") {
  auto policy = make_policy("dbs", config(4, 128));
  Plan p = policy->initial();
  p.batch.pop_back();
  p.offset.pop_back();
  CHECK_THROWS_WITH_AS(policy->next(p, four()),
                       "current plan has 3 batch sizes and 3 offsets but the job has 4 ranks",
                       InputError);
  p = policy->initial();
  p.global_batch = 64;
  CHECK_THROWS_WITH_AS(policy->next(p, four()),
                       "current plan has global batch 64 but the job has 128", InputError);
  p = policy->initial();
  p.batch[0] += 1;
  CHECK_THROWS_WITH_AS(policy->next(p, four()),
                       "current plan's batch sizes sum to 129, not its global batch 128",
                       InputError);
}

TEST_CASE("Policy.Dbs.RefusesNonFiniteThroughputAndKeepsItsState") {
  auto policy = make_policy("dbs", config(2, 128));
  std::vector<Report> r(2);
  for (int i = 0; i < 2; ++i) {
    r[i].rank = i;
    r[i].batch = 64;
    r[i].samples = 640;
    r[i].steps = 10;
    r[i].compute_s = 1;
  }
  const Plan first = policy->next(policy->initial(), r);
  const std::vector<double> before = policy->state();
  r[1].compute_s = 1e-320;  // 640 / 1e-320 is infinite
  try {
    policy->next(first, r);
    FAIL("an infinite throughput was accepted");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) == "report of rank 1: throughput inf samples/s is not finite");
  }
  CHECK(policy->state() == before);  // nothing of the refused epoch was stored
  r[1].compute_s = 1;
  CHECK(policy->next(first, r).predicted_epoch_s > 0);
}

TEST_CASE("Policy.Static.RefusesNonFiniteThroughput") {
  std::vector<Report> r(4);
  for (int i = 0; i < 4; ++i) {
    r[i].rank = i;
    r[i].samples = 320;
    r[i].compute_s = i == 2 ? 1e-320 : 1;
  }
  CHECK(input_error("static", r) == "plan for epoch 2: throughput of rank 2 is inf, not finite");
}
