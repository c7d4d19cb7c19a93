// The dbs policy under its cost model (reports with work times): it converges to the
// water-filled plan of the true costs, stays put under noisy steady speeds (hysteresis), follows
// a real change within one epoch, and its state round-trips.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "lib/common/error.h"
#include "lib/policy/cost.h"
#include "lib/policy/estimator.h"
#include "lib/policy/policy.h"
#include "lib/policy/steps.h"
#include "tests/policy/cases.h"

namespace {

using namespace dbs;
using namespace dbs::policy;
using namespace dbs::policy::test;

constexpr std::int64_t kSamples = 6000;

// One epoch of a rank with true cost c under plan: full steps at b, the short last step, each
// step's time times (1 + e) with e uniform in [-jitter, jitter]; the allreduce costs comm_s per
// step plus the wait for the slowest rank.
std::vector<Report> epoch_reports(const Plan& plan, const std::vector<Cost>& truth,
                                  double jitter, std::mt19937& rng, double comm_s = 0.002,
                                  std::int64_t epoch_samples = kSamples) {
  std::uniform_real_distribution<double> e(-jitter, jitter);
  const int B = plan.global_batch;
  const std::int64_t steps = (epoch_samples + B - 1) / B;
  const int last = static_cast<int>(epoch_samples - (steps - 1) * B);
  std::vector<std::vector<std::pair<int, double>>> work(truth.size());
  std::vector<double> waits(truth.size(), 0.0), compute(truth.size(), 0.0);
  std::vector<std::int64_t> samples(truth.size(), 0);
  for (std::int64_t s = 0; s < steps; ++s) {
    const std::vector<int> b = s + 1 < steps ? plan.batch : step_batch(plan, last);
    std::vector<double> t(truth.size());
    for (std::size_t i = 0; i < truth.size(); ++i) t[i] = truth[i].at(b[i]) * (1 + e(rng));
    const double slowest =
        std::accumulate(t.begin(), t.end(), 0.0, [](double a, double x) { return std::max(a, x); });
    for (std::size_t i = 0; i < truth.size(); ++i) {
      work[i].emplace_back(b[i], t[i]);
      compute[i] += t[i];
      samples[i] += b[i];
      waits[i] += slowest - t[i] + comm_s;
    }
  }
  std::vector<Report> out(truth.size());
  for (std::size_t i = 0; i < truth.size(); ++i) {
    Report& r = out[i];
    r.rank = static_cast<int>(i);
    r.epoch = plan.epoch;
    r.batch = plan.batch[i];
    r.samples = samples[i];
    r.steps = steps;
    r.compute_s = compute[i];
    r.comm_s = waits[i];
    r.work = cost_points(work[i]);
  }
  return out;
}

JobSettings job(int world, int B) {
  JobSettings s = config(world, B);
  s.samples_per_epoch = kSamples;
  return s;
}

}  // namespace

TEST_CASE("Estimator.Dbs.ConvergesToTheWaterFilledPlanOfTheTrueCosts") {
  // Rank 1 at a third of rank 0's speed with a fixed cost (its optimizer update) 3x as long.
  const std::vector<Cost> truth = {{0.010, 0.0007}, {0.030, 0.0021}};
  std::mt19937 rng(1);
  auto policy = make_policy("dbs", job(2, 256));
  Plan p = policy->initial();
  for (int e = 0; e < 4; ++e) p = policy->next(p, epoch_reports(p, truth, 0.0, rng));
  const std::vector<int> want = water_fill(truth, 256, 1, 256);
  CHECK(std::abs(p.batch[0] - want[0]) <= 1);
  // The proportional plan (batch ~ 1 / beta) would be 192/64: the fixed cost moves samples.
  CHECK(p.batch[1] < 64);
  CHECK(p.predicted_epoch_s == doctest::Approx(epoch_time(truth, p, kSamples, 0.002)).epsilon(0.02));
  CHECK(p.ideal_epoch_s <= p.predicted_epoch_s);
  CHECK(p.reason.find("cost model") != std::string::npos);
}

TEST_CASE("Estimator.Dbs.NoOscillationUnderNoisySteadySpeeds") {
  // 25% jitter per step (a quota-throttled rank), steady speeds: after settling, epochs 3..12
  // change the plan at most once.
  const std::vector<Cost> truth = {{0.010, 0.0007}, {0.030, 0.0021}};
  for (unsigned seed = 1; seed <= 20; ++seed) {
    CAPTURE(seed);
    std::mt19937 rng(seed);
    auto policy = make_policy("dbs", job(2, 256));
    Plan p = policy->initial();
    int changes = 0;
    for (int e = 0; e < 12; ++e) {
      p = policy->next(p, epoch_reports(p, truth, 0.25, rng));
      if (e >= 2 && p.changed) ++changes;
    }
    CHECK(changes <= 1);
    // And the plan it sits on is close to the best one: within 3% of its step time.
    const std::vector<int> best = water_fill(truth, 256, 1, 256);
    CHECK(step_time(truth, p.batch, 0) <= 1.03 * step_time(truth, best, 0));
  }
}

TEST_CASE("Estimator.FamilySigmas.NormalQuantilesAndTheChangeTestPerRankCount") {
  using policy::detail::CostEstimator;
  using policy::detail::family_sigmas;
  CHECK(family_sigmas(1, 0.05, false) == doctest::Approx(1.6449).epsilon(1e-4));
  CHECK(family_sigmas(1, 0.05, true) == doctest::Approx(1.9600).epsilon(1e-4));
  CHECK(family_sigmas(10, 0.1, true) == doctest::Approx(2.5758).epsilon(1e-4));  // 0.01 each
  // 4 standard errors up to 3 ranks; as rarely passed by the largest of 64 and 256 errors.
  for (int n : {1, 2, 3}) CHECK(CostEstimator::sigmas(n) == 4);
  CHECK(CostEstimator::sigmas(64) == doctest::Approx(4.67).epsilon(0.005));
  CHECK(CostEstimator::sigmas(256) == doctest::Approx(4.95).epsilon(0.005));
}

// Many ranks: the plan holds still on noise. 256 ranks of four node types at 1, 0.75, 0.5 and
// 0.25 of the fastest (the best split: 1 s a step), 10 steps an epoch, 5% noise a step (uniform,
// +-8.7%), as the emulated 256-rank cluster. Among 256 ranks some estimate is always 2 standard
// errors off and some epoch several standard errors from its history: a gain gate and a change
// test made for a few ranks re-plan on that noise (3-4 times in 12 epochs), and small re-plans
// leave a rank's batch sizes too close together to fit a line through (a slope near 0 once gave a
// rank twice its share). After the balancing plan a seed may refine it once or twice, and every
// change lowers the true step time; the last plan is within 4% of the best split.
TEST_CASE("Estimator.Dbs.ManyRanksHoldStillOnNoise") {
  constexpr int kWorld = 256, kBatch = 256 * 150;
  std::vector<Cost> truth;
  for (int i = 0; i < kWorld; ++i)
    truth.push_back({0.0, (1.0 / 240) / (1 - 0.25 * (i * 4 / kWorld))});
  JobSettings s = config(kWorld, kBatch);
  s.samples_per_epoch = 10 * kBatch;
  const double best = step_time(truth, water_fill(truth, kBatch, 1, kBatch), 0);
  int total = 0;
  for (unsigned seed = 1; seed <= 20; ++seed) {
    CAPTURE(seed);
    std::mt19937 rng(seed);
    auto policy = make_policy("dbs", s);
    Plan p = policy->initial();
    int changes = 0;
    for (int e = 0; e < 12; ++e) {
      const double before = step_time(truth, p.batch, 0);
      p = policy->next(p, epoch_reports(p, truth, 0.0866, rng, 0.002, s.samples_per_epoch));
      if (e >= 1 && p.changed) {
        CAPTURE(e);
        CAPTURE(p.reason);
        ++changes;
        CHECK(step_time(truth, p.batch, 0) < before);
      }
    }
    total += changes;
    CHECK(changes <= 2);
    CHECK(step_time(truth, p.batch, 0) <= 1.04 * best);
  }
  CHECK(total <= 25);
}

TEST_CASE("Estimator.Dbs.AWarmUpFirstEpochDoesNotUnderloadTheSlowRank") {
  // Rank 1 slowed x3 (no fixed cost: its sleep scales its compute); the first epoch, at the equal
  // split, is 10% slower per sample on both ranks (warm-up), as measured on the 2-core machine.
  // Its b = 128 points disagree with the later, smaller batches (a line through them has a
  // negative intercept): the plan must still come from the current speeds.
  const std::vector<Cost> truth = {{0.0, 0.00072}, {0.0, 0.00227}};
  std::vector<Cost> warm = truth;
  for (Cost& c : warm) c.beta *= 1.10;
  std::mt19937 rng(5);
  auto policy = make_policy("dbs", job(2, 256));
  Plan p = policy->next(policy->initial(), epoch_reports(policy->initial(), warm, 0.0, rng));
  for (int e = 0; e < 4; ++e) p = policy->next(p, epoch_reports(p, truth, 0.0, rng));
  const std::vector<int> best = water_fill(truth, 256, 1, 256);  // about 194/62
  CAPTURE(p.batch[1]);
  CHECK(std::abs(p.batch[1] - best[1]) <= 1);
  CHECK(step_time(truth, p.batch, 0) <= 1.01 * step_time(truth, best, 0));
}

TEST_CASE("Estimator.Dbs.RealChangeIsFollowedWithinOneEpoch") {
  const std::vector<Cost> before = {{0.010, 0.0007}, {0.010, 0.0007}};
  const std::vector<Cost> after = {{0.010, 0.0007}, {0.030, 0.0021}};  // rank 1 slowed x3
  std::mt19937 rng(3);
  auto policy = make_policy("dbs", job(2, 256));
  Plan p = policy->initial();
  for (int e = 0; e < 5; ++e) p = policy->next(p, epoch_reports(p, before, 0.1, rng));
  CHECK(std::abs(p.batch[0] - 128) <= 3);
  // The first epoch at the new speed makes the next plan follow it.
  p = policy->next(p, epoch_reports(p, after, 0.1, rng));
  CHECK(p.changed);
  CHECK(p.reason.find("speed changed on rank 1") != std::string::npos);
  const std::vector<int> want = water_fill(after, 256, 1, 256);
  CHECK(step_time(after, p.batch, 0) <= 1.05 * step_time(after, want, 0));
  // And back: followed at once, close to the best plan; one epoch later within 3% of it.
  p = policy->next(p, epoch_reports(p, before, 0.1, rng));
  CHECK(p.changed);
  const std::vector<int> equal = water_fill(before, 256, 1, 256);
  CHECK(step_time(before, p.batch, 0) <= 1.08 * step_time(before, equal, 0));
  p = policy->next(p, epoch_reports(p, before, 0.1, rng));
  CHECK(step_time(before, p.batch, 0) <= 1.03 * step_time(before, equal, 0));
}

TEST_CASE("Estimator.Dbs.AfterAChangeOneSlowShortStepDoesNotSetTheFixedCost") {
  // A quota-held rank (no fixed cost; 33% of a core at 0.86 ms a sample) slows by 35% for an
  // epoch, and that epoch's single short last step is throttled twice as long, as in a quota run
  // on the 2-core machine (epoch 4: 109 ms + 2.01 ms/sample fitted from it, plan 221/35 where
  // the new speed's best was 207/49). The short step's history, cut to a prior at the change, must
  // not make that one step firm enough to fit the fixed cost from: the plan follows the new
  // speed, proportionally.
  const std::vector<Cost> before = {{0.0, 0.00074}, {0.0, 0.0026}};
  const std::vector<Cost> after = {{0.0, 0.00074}, {0.0, 0.0026 * 1.35}};
  for (unsigned seed = 1; seed <= 10; ++seed) {
    CAPTURE(seed);
    std::mt19937 rng(seed);
    auto policy = make_policy("dbs", job(2, 256));
    Plan p = policy->initial();
    for (int e = 0; e < 4; ++e) p = policy->next(p, epoch_reports(p, before, 0.05, rng));
    auto slow = epoch_reports(p, after, 0.05, rng);
    REQUIRE(slow[1].work[1].steps == 1);  // the short last step
    slow[1].work[1].mean_s *= 2;
    p = policy->next(p, slow);
    CAPTURE(p.reason);
    CHECK(p.reason.find("speed changed on rank 1") != std::string::npos);
    const std::vector<int> best = water_fill(after, 256, 1, 256);  // about 207/49
    CAPTURE(p.batch[1]);
    CHECK(std::abs(p.batch[1] - best[1]) <= 2);
  }
}

TEST_CASE("Estimator.Dbs.StateRoundTripContinuesIdentically") {
  const std::vector<Cost> truth = {{0.010, 0.0007}, {0.020, 0.0015}, {0.0, 0.001}};
  std::mt19937 rng(4), rng_copy;
  auto a = make_policy("dbs", job(3, 300));
  Plan p = a->initial();
  for (int e = 0; e < 3; ++e) p = a->next(p, epoch_reports(p, truth, 0.2, rng));
  auto b = make_policy("dbs", job(3, 300));
  b->set_state(a->state());
  CHECK(b->state() == a->state());
  rng_copy = rng;
  const Plan pa = a->next(p, epoch_reports(p, truth, 0.2, rng));
  const Plan pb = b->next(p, epoch_reports(p, truth, 0.2, rng_copy));
  CHECK(pa == pb);
  // A version-1 state (no cost history) is still accepted.
  std::vector<double> v1 = {1, 100, 200, 300, 100, 200, 300};
  CHECK_NOTHROW(b->set_state(v1));
  v1[0] = 3;
  CHECK_THROWS_AS(b->set_state(v1), dbs::InputError);
}

TEST_CASE("Estimator.Dbs.RejectsNonFiniteWorkTimesAndKeepsItsState") {
  const std::vector<Cost> truth = {{0.010, 0.0007}, {0.030, 0.0021}};
  std::mt19937 rng(5);
  auto policy = make_policy("dbs", job(2, 256));
  Plan p = policy->initial();
  p = policy->next(p, epoch_reports(p, truth, 0.0, rng));
  const auto state = policy->state();
  auto bad = epoch_reports(p, truth, 0.0, rng);
  bad[1].work[0].mean_s = std::nan("");
  CHECK_THROWS_WITH_AS(policy->next(p, bad), doctest::Contains("report of rank 1: work time"),
                       dbs::InputError);
  CHECK(policy->state() == state);
}

TEST_CASE("Estimator.Dbs.ObserveLearnsWhatNextLearnsWithoutPlanning") {
  // A planner that takes its plans from elsewhere observes each epoch: its estimator then
  // plans the next epoch as one that planned every epoch would. A speed change (epoch 3) and
  // noise make the estimator's rules matter.
  for (const char* spec : {"dbs", "dbs-rate"}) {
    CAPTURE(spec);
    std::vector<Cost> truth = {{0.010, 0.0007}, {0.030, 0.0021}, {0.005, 0.0010}};
    std::mt19937 rng(8);
    auto planning = make_policy(spec, job(3, 256)), observing = make_policy(spec, job(3, 256));
    Plan p = planning->initial();
    for (int e = 0; e < 6; ++e) {
      if (e == 3) truth[2].beta *= 3;
      const auto r = epoch_reports(p, truth, 0.05, rng);
      observing->observe(p, r);
      const Plan next = planning->next(p, r);
      CHECK(observing->state() == planning->state());
      p = next;
    }
    const auto r = epoch_reports(p, truth, 0.05, rng);
    CHECK(observing->next(p, r) == planning->next(p, r));
    // Refused reports leave the estimator as it was, as next() does.
    const auto state = observing->state();
    auto bad = epoch_reports(p, truth, 0.0, rng);
    bad[1].work[0].mean_s = std::nan("");
    if (std::string(spec) == "dbs") {
      CHECK_THROWS_WITH_AS(observing->observe(p, bad),
                           doctest::Contains("report of rank 1: work time"), dbs::InputError);
    } else {
      bad[1].compute_s = std::nan("");
      bad[1].step_rate_median = 0;
      CHECK_THROWS_AS(observing->observe(p, bad), dbs::InputError);
    }
    CHECK(observing->state() == state);
  }
}

TEST_CASE("Estimator.DbsRateIgnoresWorkTimes") {
  // "dbs-rate" plans from throughputs only, whatever work times the reports carry; "dbs"
  // without work times (older traces, replay of them) plans exactly as it does.
  const std::vector<Cost> truth = {{0.010, 0.0007}, {0.030, 0.0021}};
  std::mt19937 rng(6);
  auto with = make_policy("dbs-rate", job(2, 256)), without = make_policy("dbs-rate", job(2, 256));
  auto dbs_without = make_policy("dbs", job(2, 256));
  Plan a = with->initial(), b = without->initial(), c = dbs_without->initial();
  for (int e = 0; e < 4; ++e) {
    auto reports = epoch_reports(a, truth, 0.1, rng);
    a = with->next(a, reports);
    for (Report& r : reports) r.work = {};
    b = without->next(b, reports);
    c = dbs_without->next(c, reports);
    CHECK(a == b);
    CHECK(c == b);
    CHECK(a.reason.find("cost model") == std::string::npos);
  }
}

TEST_CASE("Estimator.DbsCostIsDbs") {
  // "dbs-cost", the cost model's name before it was dbs's, still names it (journals, traces).
  const std::vector<Cost> truth = {{0.010, 0.0007}, {0.030, 0.0021}};
  std::mt19937 rng(8);
  auto dbs = make_policy("dbs", job(2, 256)), old = make_policy("dbs-cost", job(2, 256));
  Plan a = dbs->initial(), b = old->initial();
  for (int e = 0; e < 4; ++e) {
    const auto reports = epoch_reports(a, truth, 0.1, rng);
    a = dbs->next(a, reports);
    b = old->next(b, reports);
    CHECK(a == b);
    CHECK(a.reason.find("cost model") != std::string::npos);
  }
  CHECK(old->name() == "dbs");
}

// The gain gate weighs a plan's gain against the whole predicted epoch, the exchange included.
// Rank 1 is 20% slower: balancing saves about 9% of the compute. Over a slow link, 0.5 s of
// allreduce a step, that is 2.2% of the epoch, under a 5% --min-gain: the plan stays. Once the
// models are averaged every 8 steps instead, the same reports predict 3 exchanges an epoch
// instead of 24, the gain is 6.6% and the plan changes. The predicted epoch and its
// exchange_epoch_s count the exchanges the planned epoch makes.
TEST_CASE("Estimator.Dbs.TheGainGateWeighsTheExchangeWhichAveragingShrinks") {
  const std::vector<Cost> truth = {{0.0, 0.0010}, {0.0, 0.0012}};
  constexpr double kAllreduce = 0.5;
  for (const int every : {0, 8}) {
    CAPTURE(every);
    JobSettings s = job(2, 256);
    s.min_gain = 0.05;
    s.average_every = every;
    s.average_after_epochs = every > 0 ? 1 : 0;
    auto policy = make_policy("dbs", s);
    std::mt19937 rng(1);
    const Plan first = policy->initial();
    const Plan p = policy->next(first, epoch_reports(first, truth, 0.0, rng, kAllreduce));
    const double exchanges = every > 0 ? 3 : 24;
    CHECK(p.exchange_epoch_s == doctest::Approx(exchanges * kAllreduce));
    CHECK(p.predicted_epoch_s ==
          doctest::Approx(epoch_time(truth, p, kSamples, exchanges * kAllreduce / 24)));
    if (every == 0) {
      CHECK_FALSE(p.changed);
      CHECK(p.reason.find("kept: predicted gain 2.") == 0);
      CHECK(p.reason.find("allreduce 500 ms") != std::string::npos);
    } else {
      CHECK(p.changed);
      CHECK(p.batch[0] > p.batch[1]);
      CHECK(p.reason.find("average 500 ms every 8 steps") != std::string::npos);
    }
  }
}

// The policies that plan by throughput predict the exchange too: static's epoch is the slowest
// rank's compute at every step plus its exchanges.
TEST_CASE("Estimator.Static.PredictedEpochCountsTheExchange") {
  const std::vector<Cost> truth = {{0.0, 0.0010}, {0.0, 0.0020}};
  std::mt19937 rng(1);
  auto policy = make_policy("static", job(2, 256));
  const Plan first = policy->initial();
  const Plan p = policy->next(first, epoch_reports(first, truth, 0.0, rng, 0.1));
  CHECK(p.exchange_epoch_s == doctest::Approx(24 * 0.1));
  // 23 full steps of 128 at 2 ms a sample, the last of 112 split 56/56, and 24 allreduces.
  CHECK(p.predicted_epoch_s == doctest::Approx(24 * 0.256 + 24 * 0.1).epsilon(0.01));
}
