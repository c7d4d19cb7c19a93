// The trainer and its planner: re-plans inside an epoch through the planner, a resumed dbs run
// that continues from the checkpointed estimator state, the daemon planner's fallback state
// in the checkpoint, and ranks that disagree on whether a daemon plans.
#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/comm/group.h"
#include "lib/comm/local.h"
#include "lib/planner/remote.h"
#include "lib/train/config.h"
#include "tests/train/helpers.h"

using namespace dbs;
using namespace dbs::train::test;

namespace {

// The embedded dbs planner fed with reports whose times come from a script of speeds instead of
// the clock, so that two runs plan alike: compute_s = samples / v[epoch][rank], no median and
// no work times (so dbs uses its throughput estimator, not the cost model), so that the
// estimator's state (a drop held as a suspected stall) decides a plan.
class ScriptedSpeeds : public Planner {
 public:
  ScriptedSpeeds(Settings settings, int world, std::vector<std::vector<double>> v)
      : embedded_(with_dbs(std::move(settings)), world), v_(std::move(v)) {}
  const Plan& plan() const override { return embedded_.plan(); }
  Planned next(std::span<const Report> reports) override {
    std::vector<Report> r(reports.begin(), reports.end());
    for (Report& x : r) {
      x.compute_s = static_cast<double>(x.samples) /
                    v_.at(static_cast<std::size_t>(x.epoch)).at(static_cast<std::size_t>(x.rank));
      x.comm_s = 0;
      x.step_rate_median = 0;
      x.work = {};
    }
    return embedded_.next(r);
  }
  std::optional<Planned> rebalance(std::span<const Report> window) override {
    return embedded_.rebalance(window);
  }
  std::vector<double> state() const override { return embedded_.state(); }
  void set_state(const Plan& plan, const std::vector<double>& state) override {
    embedded_.set_state(plan, state);
  }

 private:
  static Settings with_dbs(Settings settings) {
    settings.policy = dbs::parse_policy("dbs");
    return settings;
  }

  planner::Embedded embedded_;
  std::vector<std::vector<double>> v_;  // samples/s per epoch (from 0) and rank
};

std::vector<nlohmann::json> records(const std::string& path, const std::string& type) {
  std::vector<nlohmann::json> out;
  std::ifstream f(path);
  for (std::string line; std::getline(f, line);) {
    nlohmann::json j = nlohmann::json::parse(line);
    if (j.value("type", "") == type) out.push_back(std::move(j));
  }
  return out;
}

}  // namespace

// Rank 1 sleeps 2x its compute time on top of it (x3) from the start; with rebalance_every 2
// the first epoch's 8 steps re-plan after steps 2, 4 and 6 from the step times the ranks share
// in the gradient buffer, and the first re-plan moves samples to rank 0.
TEST_CASE("Train.RebalanceEvery.ReplansInsideTheEpochThroughThePlanner") {
  const auto trace = std::filesystem::temp_directory_path() / "dbs-train-rebalance.jsonl";
  train::Config c = small_config("lenet", 1024);
  c.rebalance_every = 2;
  c.disturbances = {trace::parse_disturbance("rank=1,factor=3")};
  c.trace_path = trace.string();
  const train::RunResult r = run_ranks(c, 2);
  REQUIRE(r.epochs.size() == 1);
  REQUIRE(r.epochs[0].replans >= 1);
  CHECK(r.epochs[0].batch == std::vector<int>{64, 64});  // the plan the epoch started with
  std::vector<nlohmann::json> replans;
  for (auto& p : records(trace.string(), "plan"))
    if (p.at("step").get<int>() > 0) replans.push_back(p);
  REQUIRE(static_cast<int>(replans.size()) == r.epochs[0].replans);
  CHECK(replans[0].at("step") == 2);
  for (const auto& p : replans) {
    const auto b = p.at("batch").get<std::vector<int>>();
    CAPTURE(p.dump());
    CHECK(p.at("source") == "rebalance");
    CHECK(p.at("epoch") == 1);
    CHECK(std::accumulate(b.begin(), b.end(), 0) == 128);
    CHECK(b[1] < b[0]);
  }
  std::filesystem::remove(trace);
}

// dbs with an estimator that holds the first low epoch: rank 1 drops from 300 to 100 samples/s
// in epoch 3 (from 1), after the checkpoint of epoch 2. Only the estimator state restored from
// the checkpoint holds that drop for one epoch, as the uninterrupted run does; a fresh estimator
// follows at once and epoch 4 would run 96/32 instead of 64/64.
TEST_CASE("Train.Resume.DbsWithPolicyStateEndsWithTheSameParameters") {
  const auto dir = std::filesystem::temp_directory_path() / "dbs-train-resume-dbs";
  std::filesystem::remove_all(dir);
  train::Config c = small_config("lenet", 1024);
  c.epochs = 5;
  const std::vector<std::vector<double>> v = {{300, 300}, {300, 300}, {300, 100}, {300, 100},
                                              {300, 100}};
  const PlannerFactory scripted = [&](int /*rank*/) {
    return std::make_unique<ScriptedSpeeds>(train::settings_of(c, fashion().train.n), 2, v);
  };
  const train::RunResult straight = run_ranks(c, 2, scripted);
  REQUIRE(straight.epochs.size() == 5);
  CHECK(straight.epochs[3].batch == std::vector<int>{64, 64});  // the drop held one epoch
  CHECK(straight.epochs[4].batch == std::vector<int>{96, 32});  // then followed

  train::Config first = c;
  first.epochs = 2;
  first.checkpoint_dir = dir.string();
  run_ranks(first, 2, scripted);
  train::Config rest = c;
  rest.checkpoint_dir = dir.string();
  rest.resume = true;
  const train::RunResult resumed = run_ranks(rest, 2, scripted);
  REQUIRE(resumed.epochs.size() == 5);
  for (std::size_t e = 0; e < 5; ++e) {
    CAPTURE(e);
    CHECK(resumed.epochs[e].batch == straight.epochs[e].batch);
  }
  CHECK(resumed.params == straight.params);  // bit for bit
  std::filesystem::remove_all(dir);
}

// With a daemon that cannot be reached every epoch is planned by the daemon planner's embedded
// fallback, and the checkpoint keeps that planner's estimates (dbs state {version, v_0, v_1,
// last_0, last_1, cost history: 2 ranks x 4 points x 4, empty under plain dbs}), the ones the
// plans were made from, not those of an idle second policy.
TEST_CASE("Train.Checkpoint.DaemonFallbackKeepsTheEstimatesItPlannedWith") {
  const auto dir = std::filesystem::temp_directory_path() / "dbs-train-daemon-fallback";
  std::filesystem::remove_all(dir);
  train::Config c = small_config("lenet", 512);
  c.checkpoint_dir = dir.string();
  c.trace_path = (dir / "trace.jsonl").string();
  std::filesystem::create_directories(dir);
  Remote daemon;
  daemon.address = "127.0.0.1:1";  // nothing listens there: refused at once
  daemon.job = "fallback-test";
  std::vector<std::unique_ptr<Planner>> planners(2);
  comm::LocalGroup::run(2, [&](comm::Communicator& comm) {
    auto& p = planners[static_cast<std::size_t>(comm.rank())];
    p = planner::make_remote(daemon, train::settings_of(c, fashion().train.n),
                             comm::group_of(comm));
    train::run(c, comm, fashion(), p.get());
  });
  const auto plans = records(c.trace_path, "plan");
  REQUIRE(plans.size() == 2);
  CHECK(plans[1].at("source") == "embedded-fallback");

  std::ifstream f(dir / "checkpoint.bin", std::ios::binary);
  std::ostringstream buf;
  buf << f.rdbuf();
  const std::string bytes = buf.str();
  REQUIRE(bytes.size() > 20);
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data() + 12, sizeof n);  // after the magic and the version
  const auto meta = nlohmann::json::parse(bytes.substr(20, n));
  const auto state = meta.at("policy_state").get<std::vector<double>>();
  REQUIRE(state.size() == 37);
  CHECK(state[0] == 2);
  CHECK(state[1] > 0);
  CHECK(state[2] > 0);
  CHECK(state == planners[0]->state());
  std::filesystem::remove_all(dir);
}

// A job whose ranks disagree on whether a daemon plans (one rank's planner remote, the other's
// embedded) stops at the first epoch's end with one error on every rank, naming both.
TEST_CASE("Train.Daemon.RanksThatDisagreeOnTheDaemonStopWithOneErrorEach") {
  train::Config c = small_config("lenet", 512);
  Remote daemon;
  daemon.address = "127.0.0.1:1";  // nothing listens there: refused at once
  daemon.job = "mixed-test";
  std::vector<std::string> errors(2);
  CHECK_THROWS_AS(comm::LocalGroup::run(2, [&](comm::Communicator& comm) {
    const train::Config cfg = c;
    const Settings s = train::settings_of(cfg, fashion().train.n);
    std::unique_ptr<Planner> p =
        comm.rank() == 0 ? planner::make_remote(daemon, s, comm::group_of(comm))
                         : std::unique_ptr<Planner>(
                               std::make_unique<planner::Embedded>(s, comm.size()));
    try {
      train::run(cfg, comm, fashion(), p.get());
    } catch (const CheckError& e) {
      errors[static_cast<std::size_t>(comm.rank())] = e.what();
      throw;
    }
  }),
                  CheckError);
  for (const std::string& e : errors)
    CHECK(e ==
          "ranks disagree on who plans after epoch 1: rank 0 waited for the daemon's plan, rank 1 "
          "has no daemon");
}
