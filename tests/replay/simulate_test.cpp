// The simulation engine against closed-form cases: step times, the short last step, slowdowns
// at the agent's step boundaries, the per-step median, re-plans inside an epoch, determinism.
#include "lib/replay/simulate.h"

#include <doctest/doctest.h>

#include <cmath>
#include <numbers>

#include "lib/common/error.h"

namespace {

using namespace dbs::replay;

// Two ranks at v0, v1 samples/s for `epochs` epochs of n samples in batches of b.
Cluster two_ranks(double v0, double v1, int epochs = 3, std::int64_t n = 6000, int b = 128) {
  Cluster c;
  c.world = 2;
  c.global_batch = b;
  c.samples_per_epoch = n;
  c.base.assign(static_cast<std::size_t>(epochs), {v0, v1});
  return c;
}

dbs::Settings config(const std::string& policy, int rebalance_every = 0) {
  dbs::Settings s;
  s.policy = dbs::parse_policy(policy);
  s.rebalance_every = rebalance_every;
  return s;
}

}  // namespace

TEST_CASE("Simulate.Static.StepTimeIsSlowestRankPlusCost") {
  const Cluster c = two_ranks(1000, 250, 2, 6400, 128);  // 50 full steps
  CostModel cost;
  cost.allreduce_s = 0.002;
  cost.overhead_s = 0.001;
  const SimResult r = simulate(c, cost, config("static"));
  REQUIRE(r.epochs.size() == 2);
  CHECK(r.epochs[0].compute_s == doctest::Approx(50 * 64 / 250.0));
  CHECK(r.epochs[0].time_s == doctest::Approx(50 * (64 / 250.0 + 0.003)));
  CHECK(r.epochs[0].ideal_s == doctest::Approx(6400 / 1250.0 + 50 * 0.003));
  CHECK(r.total_s == doctest::Approx(2 * r.epochs[0].time_s));
  CHECK(r.changes == 0);
  const auto& rep = r.epochs[0].reports;
  CHECK(rep[0].samples == 3200);
  CHECK(rep[1].compute_s == doctest::Approx(3200 / 250.0));
  CHECK(rep[0].comm_s == doctest::Approx(50 * (64 / 250.0 - 64 / 1000.0 + 0.002)));
  CHECK(rep[1].comm_s == doctest::Approx(50 * 0.002));
  CHECK(rep[0].step_rate_median == doctest::Approx(1000));
  CHECK(rep[1].steps == 50);
}

TEST_CASE("Simulate.Dbs.BalancesAfterOneEpochAndHalvesStepTime") {
  const Cluster c = two_ranks(3000, 1000, 3, 6400, 128);
  const SimResult r = simulate(c, CostModel{}, config("dbs"));
  CHECK(r.epochs[0].plans[0].plan.batch == std::vector<int>{64, 64});
  CHECK(r.epochs[1].plans[0].plan.batch == std::vector<int>{96, 32});
  CHECK(r.epochs[1].changes == 1);
  CHECK(r.epochs[2].changes == 0);
  CHECK(r.epochs[1].time_s == doctest::Approx(r.epochs[0].time_s / 2));
  CHECK(r.epochs[1].time_s == doctest::Approx(r.epochs[1].ideal_s));
}

TEST_CASE("Simulate.ShortLastStep.SplitInPlanProportions") {
  // 6000 = 46 x 128 + 112: the last step splits 112 as 56 / 56 under static.
  const Cluster c = two_ranks(1000, 500, 1, 6000, 128);
  const SimResult r = simulate(c, CostModel{}, config("static"));
  CHECK(r.epochs[0].reports[1].samples == 46 * 64 + 56);
  CHECK(r.epochs[0].compute_s == doctest::Approx(46 * 64 / 500.0 + 56 / 500.0));
  CHECK(r.epochs[0].reports[0].steps == 47);
}

TEST_CASE("Simulate.Slowdown.StartsAtTheAgentsStepAndMedianTakesIndexHalf") {
  // 47 steps; from = 1.5 is active from the first step s with s / 47 >= 0.5, s = 24: 23 slow
  // steps of 47, so the median (index 23 of the sorted rates) is still a fast one.
  Cluster c = two_ranks(1000, 1000, 2, 6000, 128);
  c.slowdowns.push_back({1, 3.0, 1.5, -1.0, dbs::trace::Disturbance::Mode::sleep});
  CHECK(rate_changes(c, 0) == std::vector<std::int64_t>{24});
  CHECK(rates_at(c, 0, 23)[1] == 1000);
  CHECK(rates_at(c, 0, 24)[1] == doctest::Approx(1000 / 3.0));
  const SimResult r = simulate(c, CostModel{}, config("static"));
  const auto& rep = r.epochs[0].reports[1];
  CHECK(rep.compute_s ==
        doctest::Approx(24 * 64 / 1000.0 + 22 * 64 * 3 / 1000.0 + 56 * 3 / 1000.0));
  CHECK(rep.step_rate_median == doctest::Approx(1000));
  CHECK(r.epochs[1].reports[1].step_rate_median == doctest::Approx(1000 / 3.0));
}

TEST_CASE("Simulate.Slowdown.StopsInsideAnEpoch") {
  Cluster c = two_ranks(1000, 1000, 3, 6400, 128);  // 50 steps
  c.slowdowns.push_back({0, 2.0, 1.5, 2.5, dbs::trace::Disturbance::Mode::sleep});
  CHECK(rate_changes(c, 0) == std::vector<std::int64_t>{25});
  CHECK(rate_changes(c, 1) == std::vector<std::int64_t>{25});
  CHECK(rate_changes(c, 2).empty());
  CHECK(rates_at(c, 1, 24)[0] == doctest::Approx(500));
  CHECK(rates_at(c, 1, 25)[0] == 1000);
}

TEST_CASE("Simulate.RebalanceEvery.ReplansInsideTheEpochAtMultiplesOfK") {
  Cluster c = two_ranks(1000, 1000, 2, 6400, 128);  // 50 steps
  c.slowdowns.push_back({1, 4.0, 1.2, -1.0, dbs::trace::Disturbance::Mode::sleep});
  const SimResult r = simulate(c, CostModel{}, config("dbs", 10));
  const EpochRun& e = r.epochs[0];
  REQUIRE(e.plans.size() >= 2);
  for (std::size_t k = 1; k < e.plans.size(); ++k) {
    CHECK(e.plans[k].step % 10 == 0);
    CHECK(e.plans[k].source == "rebalance");
  }
  CHECK(e.replans == static_cast<int>(e.plans.size()) - 1);
  CHECK(e.plans.back().plan.batch[1] < 64);
  // Without re-plans inside the epoch the first epoch is slower.
  const SimResult per_epoch = simulate(c, CostModel{}, config("dbs"));
  CHECK(e.time_s < per_epoch.epochs[0].time_s);
}

TEST_CASE("Simulate.Deterministic") {
  Cluster c = two_ranks(1234.5, 321.25, 5, 6000, 96);
  c.slowdowns.push_back({0, 2.5, 2.3, 3.7, dbs::trace::Disturbance::Mode::sleep});
  CostModel cost;
  cost.allreduce_s = 0.001;
  cost.overhead_s = 0.0005;
  const SimResult a = simulate(c, cost, config("dbs", 7));
  const SimResult b = simulate(c, cost, config("dbs", 7));
  CHECK(a.total_s == b.total_s);
  for (std::size_t e = 0; e < a.epochs.size(); ++e) {
    CHECK(a.epochs[e].plans.size() == b.epochs[e].plans.size());
    CHECK(a.epochs[e].next == b.epochs[e].next);
  }
}

TEST_CASE("Simulate.RingAllreduceModel") {
  CHECK(ring_allreduce_s(1, 1e6, 1e-5, 1e9) == 0);
  CHECK(ring_allreduce_s(2, 1e6, 1e-5, 1e9) == doctest::Approx(2 * 1e-5 + 1e6 / 1e9));
  CHECK(ring_allreduce_s(4, 1e6, 0, 0) == 0);
  CHECK(allreduce_bytes(690590, 2) == 4.0 * (690590 + 2 + 4));
}

TEST_CASE("Simulate.TreeAllreduceModel.LogarithmicMessagesOfTheWholeBuffer") {
  CHECK(tree_allreduce_s(1, 1e6, 1e-5, 1e9) == 0);
  CHECK(tree_allreduce_s(8, 1e6, 1e-5, 1e9) == doctest::Approx(6 * (1e-5 + 1e6 / 1e9)));
  CHECK(tree_allreduce_s(5, 1e6, 1e-5, 0) == doctest::Approx(6 * 1e-5));  // ceil(log2 5) = 3
  CHECK(allreduce_s(Allreduce::ring, 8, 1e6, 1e-5, 1e9) ==
        doctest::Approx(14 * 1e-5 + 1.75 * 1e6 / 1e9));
  // Latency-bound (small buffers, many ranks) the tree wins; bandwidth-bound the ring.
  CHECK(tree_allreduce_s(64, 1e3, 1e-5, 1e9) < ring_allreduce_s(64, 1e3, 1e-5, 1e9));
  CHECK(tree_allreduce_s(64, 1e8, 1e-5, 1e9) > ring_allreduce_s(64, 1e8, 1e-5, 1e9));
  CHECK(parse_allreduce("tree") == Allreduce::tree);
  CHECK_THROWS_WITH_AS(parse_allreduce("star"), "allreduce model 'star': expected ring or tree",
                       dbs::ConfigError);
}

TEST_CASE("Simulate.FixedCost.StepCostsAlphaPlusBetaB") {
  Cluster c = two_ranks(1000, 250, 1, 6400, 128);  // 50 full steps
  c.alpha = {{0.02, 0.004}};
  const SimResult r = simulate(c, CostModel{}, config("static"));
  CHECK(r.epochs[0].compute_s == doctest::Approx(50 * (0.004 + 64 / 250.0)));
  CHECK(r.epochs[0].reports[0].compute_s == doctest::Approx(50 * (0.02 + 64 / 1000.0)));
  // The perfect split solves 0.02 + b0 / 1000 = 0.004 + b1 / 250 with b0 + b1 = 128.
  const double level = (128 + 0.02 * 1000 + 0.004 * 250) / 1250.0;
  CHECK(r.epochs[0].ideal_compute_s == doctest::Approx(50 * level));
  // dbs-rate plans in proportion to samples / compute s: it cannot see the fixed costs.
  const SimResult d = simulate(c, CostModel{}, config("dbs-rate"));
  CHECK(d.epochs[0].plans[0].plan.batch == std::vector<int>{64, 64});
}

TEST_CASE("Simulate.Jitter.BalancedStepCostsTheExpectedMaximum") {
  Cluster c = two_ranks(1000, 1000, 1, 6400, 128);
  c.jitter = {{0.1, 0.1}};
  const SimResult r = simulate(c, CostModel{}, config("static"));
  // Two independent normal times of mean m and sd s: E[max] = m + s / sqrt(pi).
  const double m = 0.064, s = 0.0064;
  CHECK(r.epochs[0].compute_s == doctest::Approx(50 * (m + s / std::sqrt(std::numbers::pi))));
  // Far apart, the slower rank's mean alone.
  Cluster apart = two_ranks(1000, 250, 1, 6400, 128);
  apart.jitter = {{0.1, 0.1}};
  CHECK(simulate(apart, CostModel{}, config("static")).epochs[0].compute_s ==
        doctest::Approx(50 * 64 / 250.0).epsilon(1e-6));
}

TEST_CASE("Simulate.Quota.HeldRankRunsInPeriods") {
  // Rank 1 needs 0.05 s at full speed per step, its quota grants a third of each 0.1 s period:
  // busy all the time, it runs at the quota's rate, 0.15 s per step.
  Cluster c = two_ranks(1000, 64 / 0.05, 1, 6400, 128);
  c.held = {0.0, 1.0 / 3};
  const SimResult r = simulate(c, CostModel{}, config("static"));
  CHECK(r.epochs[0].compute_s / 50 == doctest::Approx(0.15).epsilon(0.02));
  const dbs::Report& held = r.epochs[0].reports[1];
  CHECK(held.work[0].batch == 0);  // no work points without work bias (a trace without them)
  // The first step: 1/30 s of the grant, throttled to 0.1 s, then the rest.
  Cluster one = c;
  one.samples_per_epoch = 128;
  CHECK(simulate(one, CostModel{}, config("static")).epochs[0].compute_s ==
        doctest::Approx(0.1 + 0.05 - 0.1 / 3));
  // Given little work (1/100 s per step against rank 0's 0.064 s), it never runs out of its
  // grant: each step at full speed, though its sustained time, which it reports as work, is
  // 0.03 s.
  Cluster light = two_ranks(1000, 64 / 0.01, 1, 6400, 128);
  light.held = {0.0, 1.0 / 3};
  light.work_bias.assign(1, std::vector<Cluster::WorkBias>(2, Cluster::WorkBias{true, {1, 1}, {0, 0}}));
  const SimResult l = simulate(light, CostModel{}, config("static"));
  CHECK(l.epochs[0].compute_s == doctest::Approx(50 * 0.064));
  CHECK(l.epochs[0].reports[1].compute_s == doctest::Approx(50 * 0.01));
  CHECK(l.epochs[0].reports[1].work[0].mean_s == doctest::Approx(0.03));
  // Every epoch starts at a period's start with the full grant: the same time every epoch.
  Cluster two = c;
  two.base.push_back(two.base[0]);
  const SimResult t = simulate(two, CostModel{}, config("static"));
  CHECK(t.epochs[1].compute_s == doctest::Approx(t.epochs[0].compute_s));
}

TEST_CASE("Simulate.Quota.HeldRankPaysItsExchangeFromItsQuota") {
  // Rank 1 needs 0.05 s at full speed per step and 0.01 s more at the exchange (its CPU there),
  // its quota a third of each 0.1 s period: busy all the time, a step takes 0.06 s of quota, so
  // 0.18 s at the quota's rate, where its work alone would take 0.15 s.
  Cluster c = two_ranks(1000, 64 / 0.05, 1, 6400, 128);
  c.held = {0.0, 1.0 / 3};
  c.held_outside = {0.0, 0.01};
  const SimResult r = simulate(c, CostModel{}, config("static"));
  CHECK(r.epochs[0].time_s / 50 == doctest::Approx(0.18).epsilon(0.02));
  // Given little work, its grant covers the exchange too: nothing waits for it.
  Cluster light = two_ranks(1000, 64 / 0.01, 1, 6400, 128);
  light.held = {0.0, 1.0 / 3};
  light.held_outside = {0.0, 0.005};
  CHECK(simulate(light, CostModel{}, config("static")).epochs[0].time_s ==
        doctest::Approx(50 * 0.064));
}
