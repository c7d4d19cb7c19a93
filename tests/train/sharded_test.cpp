// The sharded optimizer update (Config::update "sharded") and the exchange overlapped with the
// backward pass (Config::overlap) against the plain replicated update on the in-process
// communicator, whose reduce-scatter and bucketed sums add in the same (rank) order as its
// allreduce: the same bits under plans that change between and inside epochs, and checkpoints
// that hold the whole optimizer state.
#include <doctest/doctest.h>

#include <filesystem>
#include <numeric>

#include "tests/train/helpers.h"

using namespace dbs;
using namespace dbs::train::test;

namespace {

const std::vector<std::vector<int>> kPlans = {{40, 40, 48}, {100, 28, 0}, {10, 60, 58}, {0, 0, 128}};

PlannerFactory cycle() { return plan_cycle(kPlans); }

}  // namespace

// 2 epochs of 8 steps, a re-plan every 3 steps: 6 different slicings, a rank with an empty
// batch (and so an empty slice) among them, the short last step of each epoch, for every rule.
TEST_CASE("Sharded.SameBitsAsReplicated.UnderChangingPlans") {
  for (const std::string optimizer : {"adam", "sgd", "rmsprop"}) {
    CAPTURE(optimizer);
    train::Config c = small_config("lenet", 1000);
    c.epochs = 2;
    c.rebalance_every = 3;
    c.optimizer = optimizer;
    c.optim.weight_decay = 1e-4;
    const train::RunResult replicated = run_ranks(c, 3, cycle());
    c.update = "sharded";
    const train::RunResult sharded = run_ranks(c, 3, cycle());
    CHECK(sharded.params == replicated.params);
    CHECK(sharded.epochs.back().train_loss == replicated.epochs.back().train_loss);
    CHECK(max_abs(replicated.params) > 0);
  }
}

// A checkpoint of a sharded run holds the whole optimizer state: resumed, the run ends where the
// uninterrupted one does. Without the gathering before the checkpoint, the writer's moments
// outside its own slice are those of the first step, and the resumed run goes elsewhere.
TEST_CASE("Sharded.Resume.EndsWithTheSameParameters") {
  const auto dir = std::filesystem::temp_directory_path() / "dbs-train-sharded-resume";
  std::filesystem::remove_all(dir);
  train::Config c = small_config("lenet", 1024);
  c.epochs = 3;
  c.update = "sharded";
  c.policy = dbs::parse_policy("fixed:40,88");
  const std::vector<float> straight = run_local(c, 2);

  train::Config first = c;
  first.epochs = 1;
  first.checkpoint_dir = dir.string();
  run_local(first, 2);
  train::Config rest = c;
  rest.checkpoint_dir = dir.string();
  rest.resume = true;
  CHECK(run_local(rest, 2) == straight);
  // A replicated run resumes a sharded run's checkpoint to the same end (here, where both
  // reduce in rank order, the two updates give the same bits).
  std::filesystem::remove_all(dir);
  run_local(first, 2);
  rest.update = "replicated";
  CHECK(run_local(rest, 2) == straight);
  std::filesystem::remove_all(dir);
}

// The in-process group sums a bucket the moment it is started, so a bucket started before its
// layers' backward is done, or buckets that miss part of the gradient, change the bits.
TEST_CASE("Overlap.SameBitsAsAfterTheBackwardPass") {
  for (const std::string model : {"lenet", "cnn"}) {
    CAPTURE(model);
    train::Config c = small_config(model, model == "cnn" ? 384 : 1000);
    c.epochs = model == "cnn" ? 1 : 2;
    c.rebalance_every = 3;
    const train::RunResult plain = run_ranks(c, 3, cycle());
    c.overlap = "on";
    const train::RunResult overlapped = run_ranks(c, 3, cycle());
    CHECK(overlapped.params == plain.params);
    CHECK(overlapped.epochs.back().train_loss == plain.epochs.back().train_loss);
  }
}

TEST_CASE("Overlap.RefusedWithTheShardedUpdateAndTheRing") {
  train::Config c = small_config("lenet", 256);
  c.overlap = "on";
  c.update = "sharded";
  CHECK_THROWS_WITH_AS(run_local(c, 1), doctest::Contains("--overlap works with --update replicated"),
                       ConfigError);
  c.update = "replicated";
  c.allreduce = "ring";
  CHECK_THROWS_WITH_AS(run_local(c, 1), doctest::Contains("--overlap needs --allreduce mpi"),
                       ConfigError);
}

// auto overlaps where the ranks are on more than one host and the exchange can overlap; on and
// off are what they say. Every rank resolves it from the same gathered hosts.
TEST_CASE("Overlap.AutoWhereTheRanksSpanHosts") {
  train::Config c = small_config("lenet", 256);
  REQUIRE(c.overlap == "auto");
  const std::vector<std::string> one = {"node1", "node1", "node1"}, two = {"node1", "node1", "node2"};
  CHECK_FALSE(train::resolve_overlap(c, one));
  CHECK(train::resolve_overlap(c, two));
  CHECK_FALSE(train::resolve_overlap(c, std::vector<std::string>{"node1"}));
  c.update = "sharded";
  CHECK_FALSE(train::resolve_overlap(c, two));
  c.update = "replicated";
  c.allreduce = "ring";
  CHECK_FALSE(train::resolve_overlap(c, two));
  c.allreduce = "mpi";
  c.overlap = "on";
  CHECK(train::resolve_overlap(c, one));
  c.overlap = "off";
  CHECK_FALSE(train::resolve_overlap(c, two));
  c.overlap = "sometimes";
  CHECK_THROWS_WITH_AS(train::check_exchange(c), "--overlap 'sometimes': expected on, off or auto",
                       ConfigError);
}

TEST_CASE("Sharded.BadUpdateNameIsAConfigError") {
  train::Config c = small_config("lenet", 256);
  c.update = "halves";
  CHECK_THROWS_WITH_AS(run_local(c, 1), "--update 'halves': expected replicated or sharded",
                       ConfigError);
}
