// The public C++ API (<dbs/...>): the sampler's slices follow the step rules, the meter makes the
// report the policy reads, make_planner checks that the ranks agree, and every bad input the API
// is handed throws one error naming what is at fault, on every rank alike.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <dbs/error.h>
#include <dbs/meter.h>
#include <dbs/planner.h>
#include <dbs/steps.h>
#include <dbs/version.h>
#include <string>
#include <vector>

#include "lib/comm/group.h"
#include "lib/comm/local.h"
#include "lib/data/sampler.h"

namespace {

dbs::Plan plan_of(std::vector<int> batch, std::int64_t epoch = 0) {
  dbs::Plan p;
  p.epoch = epoch;
  for (const int b : batch) p.global_batch += b;
  p.offset = dbs::offsets_of(batch);
  p.batch = std::move(batch);
  return p;
}

// Runs body on `world` in-process ranks and returns what each threw ("" = nothing).
std::vector<std::string> errors_on(int world, const std::function<void(dbs::Group&)>& body) {
  std::vector<std::string> what(static_cast<std::size_t>(world));
  dbs::comm::LocalGroup::run(world, [&](dbs::comm::Communicator& comm) {
    dbs::Group g = dbs::comm::group_of(comm);
    try {
      body(g);
    } catch (const dbs::ConfigError& e) {
      what[static_cast<std::size_t>(comm.rank())] = std::string("config: ") + e.what();
    } catch (const dbs::InputError& e) {
      what[static_cast<std::size_t>(comm.rank())] = std::string("input: ") + e.what();
    }
  });
  return what;
}

}  // namespace

TEST_CASE("Api.Version.MatchesTheHeader") {
  CHECK(dbs::api_version().major == DBS_API_VERSION_MAJOR);
  CHECK(dbs::api_version().minor == DBS_API_VERSION_MINOR);
}

TEST_CASE("Api.Permutation.IsTheAgentsPermutation") {
  CHECK(dbs::permutation(1000, 7, 3) == dbs::data::EpochSampler(1000, 7).permutation(3));
  CHECK(dbs::permutation(1000, 7, 3) != dbs::permutation(1000, 7, 4));
}

TEST_CASE("Api.Sampler.SlicesCoverEachGlobalStepOnce") {
  // N = 1000, B = 128: 7 full steps and a short one of 104, split 3:1 as the plan (78, 26).
  dbs::Sampler sampler(1000, 128, 2, 11);
  const dbs::Plan plan = plan_of({96, 32}, 2);
  REQUIRE(sampler.steps() == 8);
  CHECK(sampler.split(plan, 7) == std::vector<int>{78, 26});
  const std::vector<std::int64_t> perm = dbs::permutation(1000, 11, 2);
  for (std::int64_t s = 0; s < sampler.steps(); ++s) {
    CAPTURE(s);
    std::vector<std::int64_t> both = sampler.indices(plan, 0, s);
    const std::vector<std::int64_t> one = sampler.indices(plan, 1, s);
    CHECK(static_cast<int>(both.size()) == sampler.split(plan, s)[0]);
    both.insert(both.end(), one.begin(), one.end());
    const auto first = perm.begin() + s * 128;
    CHECK(both == std::vector<std::int64_t>(first, first + sampler.step_samples(s)));
  }
  CHECK(sampler.epoch_indices(plan, 1).size() == 8);
  CHECK(sampler.epoch_indices(plan, 1)[3] == sampler.indices(plan, 1, 3));
}

TEST_CASE("Api.Sampler.RejectsBadInput") {
  CHECK_THROWS_WITH_AS(dbs::Sampler(100, 128, 2, 0),
                       "the data set has 100 samples, fewer than the global batch 128",
                       dbs::InputError);
  dbs::Sampler sampler(1000, 128, 2, 0);
  CHECK_THROWS_WITH_AS(sampler.indices(plan_of({64, 32, 32}), 0, 0),
                       "the plan has 3 ranks, the job has 2", dbs::InputError);
  CHECK_THROWS_WITH_AS(sampler.indices(plan_of({64, 32}), 0, 0),
                       "the plan has global batch 96, the sampler 128", dbs::InputError);
  CHECK_THROWS_WITH_AS(sampler.indices(plan_of({64, 64}), 2, 0),
                       "rank 2 out of range for 2 ranks", dbs::InputError);
  CHECK_THROWS_WITH_AS(sampler.indices(plan_of({64, 64}), 0, 8),
                       "step 8 out of range: an epoch has 8 steps", dbs::InputError);
}

TEST_CASE("Api.Meter.MakesTheReport") {
  dbs::Meter m;
  for (int i = 0; i < 3; ++i) m.step(96, 0.5, 0.1, 0.4);  // 240 samples/s of compute
  m.step(78, 0.45, 0.1, 0.3);                            // the short last step
  const dbs::Report r = m.report(plan_of({96, 32}, 4), 0);
  CHECK(r.rank == 0);
  CHECK(r.epoch == 4);
  CHECK(r.batch == 96);
  CHECK(r.samples == 3 * 96 + 78);
  CHECK(r.steps == 4);
  CHECK(r.compute_s == doctest::Approx(1.5));
  CHECK(r.comm_s == doctest::Approx(0.4));
  CHECK(r.step_rate_median == doctest::Approx(240.0));  // index 2 of 240 240 240 260
  CHECK(r.work[0] == dbs::CostPoint{96, 3, 0.5, 0.0});
  CHECK(r.work[1].batch == 78);
  CHECK(r.work[1].mean_s == doctest::Approx(0.45));
  m.reset();
  CHECK(m.steps() == 0);
  CHECK(m.report(plan_of({96, 32}), 1).samples == 0);
  CHECK_THROWS_AS(m.step(-1, 0.1), dbs::InputError);
  CHECK_THROWS_AS(m.step(1, -0.1), dbs::InputError);
  CHECK_THROWS_WITH_AS(m.report(plan_of({96, 32}), 2), "rank 2 out of range for a plan of 2 ranks",
                       dbs::InputError);
}

TEST_CASE("Api.Planner.EmbeddedPlansFromGatheredReports") {
  // Rank 1 computes at a third of rank 0's speed: the next plan gives it less.
  std::vector<dbs::Plan> next(2);
  dbs::comm::LocalGroup::run(2, [&](dbs::comm::Communicator& comm) {
    dbs::Settings s;
    s.policy = dbs::parse_policy("dbs-rate");
    s.samples_per_epoch = 1024;
    const dbs::Group g = dbs::comm::group_of(comm);
    auto planner = dbs::make_planner(s, g);
    CHECK(planner->plan().batch == std::vector<int>{64, 64});
    dbs::Meter m;
    const double per_sample = comm.rank() == 0 ? 0.001 : 0.003;
    for (int i = 0; i < 8; ++i) m.step(64, 64 * per_sample);
    const auto all = dbs::gather_reports(g, m.report(planner->plan(), g.rank));
    REQUIRE(all.size() == 2);
    CHECK(all[1].rank == 1);
    const dbs::Planned p = planner->next(all);
    CHECK(p.source == "embedded");
    next[static_cast<std::size_t>(comm.rank())] = p.plan;
  });
  CHECK(next[0] == next[1]);
  CHECK(next[0].epoch == 1);
  CHECK(next[0].batch == std::vector<int>{96, 32});
}

TEST_CASE("Api.Planner.RanksThatDisagreeAllThrow") {
  const auto what = errors_on(2, [](dbs::Group& g) {
    dbs::Settings s;
    if (g.rank == 1) s.global_batch = 256;
    dbs::make_planner(s, g);
  });
  for (const auto& w : what)
    CHECK(w == "config: the ranks disagree on the settings: rank 1 has global_batch 256 "
               "(rank 0: 128)");
  const auto policy = errors_on(3, [](dbs::Group& g) {
    dbs::Settings s;
    if (g.rank == 2) s.policy = dbs::parse_policy("static");
    dbs::make_planner(s, g);
  });
  for (const auto& w : policy)
    CHECK(w == "config: the ranks disagree on the settings: rank 2 has policy 'static' "
               "(rank 0: 'dbs')");
  const auto period = errors_on(2, [](dbs::Group& g) {
    dbs::Settings s;
    s.average_every = g.rank == 1 ? 8 : 4;
    dbs::make_planner(s, g);
  });
  for (const auto& w : period)
    CHECK(w == "config: the ranks disagree on the settings: rank 1 has average_every 8 "
               "(rank 0: 4)");
}

TEST_CASE("Api.Planner.ARemoteAtFaultOnOneRankThrowsOnEveryRank") {
  // Rank 1 alone has a bad value: it names the field, rank 0 names rank 1; none waits.
  const auto run = [](const std::function<void(dbs::Remote&)>& spoil) {
    return errors_on(2, [&](dbs::Group& g) {
      dbs::Remote r;
      r.address = "127.0.0.1:9";
      r.job = "j";
      if (g.rank == 1) spoil(r);
      dbs::make_planner(dbs::Settings{}, g, r);
    });
  };
  const auto ca = run([](dbs::Remote& r) { r.tls_ca = "/nonexistent/ca.pem"; });
  CHECK(ca[1] == "config: tls_ca /nonexistent/ca.pem: cannot read the file");
  CHECK(ca[0] == "config: rank 1: tls_ca /nonexistent/ca.pem: cannot read the file");
  const auto token = run([](dbs::Remote& r) { r.auth = dbs::Remote::Auth::token; });
  CHECK(token[1] == "config: auth 'token' needs token_file, the job's key");
  CHECK(token[0] == "config: rank 1: auth 'token' needs token_file, the job's key");
  const auto key = run([](dbs::Remote& r) { r.token_file = "/nonexistent/job.key"; });
  CHECK(key[1].rfind("config: token file /nonexistent/job.key: ", 0) == 0);
  CHECK(key[0] == "config: rank 1: " + key[1].substr(8));
  const auto job = run([](dbs::Remote& r) { r.job.clear(); });
  CHECK(job[0] == "config: rank 1: job: the daemon at 127.0.0.1:9 needs the job id, the same on "
                  "every rank");
  const auto timeout = run([](dbs::Remote& r) { r.timeout_s = 0; });
  CHECK(timeout[1] == "config: timeout_s 0: must be > 0");
  // Without an address nothing of the rest is read.
  dbs::Remote none;
  none.tls_ca = "/nonexistent/ca.pem";
  none.auth = dbs::Remote::Auth::token;
  CHECK_NOTHROW(dbs::make_planner(dbs::Settings{}, dbs::Group{}, none));
}

TEST_CASE("Api.Planner.RejectsBadInput") {
  // A fixed: spec of the wrong length fails on every rank alike.
  const auto fixed = errors_on(2, [](dbs::Group& g) {
    dbs::Settings s;
    s.policy = dbs::parse_policy("fixed:64,32,32");
    dbs::make_planner(s, g);
  });
  CHECK(fixed[0].rfind("config: ", 0) == 0);
  CHECK(fixed[0].find("fixed:64,32,32") != std::string::npos);
  CHECK(fixed[0] == fixed[1]);

  dbs::Group one;
  auto planner = dbs::make_planner(dbs::Settings{}, one);
  CHECK_THROWS_WITH_AS(planner->set_state(plan_of({64, 64}), {}),
                       "the plan to restore has 2 ranks, the job has 1", dbs::InputError);
  dbs::Group lonely;
  lonely.size = 2;
  lonely.rank = 1;
  CHECK_THROWS_WITH_AS(dbs::make_planner(dbs::Settings{}, lonely),
                       "a group of 2 ranks needs an allgather", dbs::InputError);
  lonely.rank = 2;
  CHECK_THROWS_WITH_AS(dbs::make_planner(dbs::Settings{}, lonely),
                       "rank 2 out of range for a group of 2", dbs::InputError);
}
