// The synchronous loop on the in-process communicator: the same computation under any plan,
// exact global-batch gradients from unequal slices, and resume == uninterrupted.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <mutex>
#include <numeric>

#include "lib/comm/local.h"
#include "lib/data/dataset.h"
#include "lib/nn/model.h"
#include "lib/train/trainer.h"

namespace {

using namespace dbs;

const data::FashionMnist& fashion() {
  static const data::FashionMnist d = [] {
    data::FashionMnist f = data::load_fashion_mnist();
    f.train = f.train.head(4096);
    f.test = f.test.head(512);
    return f;
  }();
  return d;
}

train::Config small_config(const std::string& model, int samples) {
  train::Config c;
  c.model = model;
  c.epochs = 1;
  c.global_batch = 128;
  c.train_limit = static_cast<std::size_t>(samples);
  c.test_limit = 256;
  c.progress = false;
  c.seed = 7;
  c.schedule.global_batch = c.global_batch;
  return c;
}

// Runs the config on `world` in-process ranks; returns rank 0's final parameters (and checks
// every rank ended with the same ones).
std::vector<float> run_local(const train::Config& c, int world) {
  std::vector<std::vector<float>> params(static_cast<std::size_t>(world));
  comm::LocalGroup::run(world, [&](comm::Communicator& comm) {
    params[comm.rank()] = train::run(c, comm, fashion()).params;
  });
  for (int r = 1; r < world; ++r) REQUIRE(params[r] == params[0]);
  return params[0];
}

double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max(m, std::fabs(static_cast<double>(x)));
  return m;
}

double max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    m = std::max(m, std::fabs(static_cast<double>(a[i]) - static_cast<double>(b[i])));
  return m;
}

}  // namespace

// Rounding differs between splits (summation order), and training amplifies it chaotically: a
// ReLU output within rounding of zero can flip, which re-routes a max-pool gradient. With seed 7
// the trajectories stay within 4e-6; other seeds reach 1e-2 relative after 16 steps (README,
// "Same computation"). The test pins the seed the acceptance names and checks the bound.
TEST_CASE("Train.SameComputation.AnyPlan.cnn.2048samples") {
  train::Config c = small_config("cnn", 2048);
  const std::vector<float> single = run_local(c, 1);
  c.policy = "fixed:64,64";
  const std::vector<float> even = run_local(c, 2);
  c.policy = "fixed:100,28";
  const std::vector<float> uneven = run_local(c, 2);
  const double scale = max_abs(single);
  MESSAGE("max |param| " << scale << ", 64/64 differs by " << max_diff(single, even)
                         << ", 100/28 by " << max_diff(single, uneven));
  CHECK(max_diff(single, even) <= 1e-4 * scale);
  CHECK(max_diff(single, uneven) <= 1e-4 * scale);
  // Training moved the parameters: the comparison is not between two untouched inits.
  train::Config none = c;
  none.train_limit = 128;
  none.policy = "dbs";
  CHECK(max_diff(single, run_local(none, 1)) > 1e-3 * scale);
}

TEST_CASE("Train.UnequalSlices.GiveTheGlobalBatchGradient") {
  // One global batch of 128 samples: its gradient sum on one model, against the allreduced sums
  // of slices 100 + 28 computed by two ranks.
  const auto& d = fashion();
  std::vector<std::int64_t> ids(128);
  std::iota(ids.begin(), ids.end(), 0);
  nn::Context ctx;
  ctx.training = true;
  ctx.seed = 3;
  ctx.sample_ids = ids.data();
  auto whole = nn::make_model("lenet", {1, 28, 28}, 10, 5);
  whole->loss_and_grads(d.train.image(0), d.train.labels.data(), 128, ctx);
  const std::vector<float> expect(whole->grads().begin(), whole->grads().end());

  std::vector<float> got;
  std::mutex mu;
  comm::LocalGroup::run(2, [&](comm::Communicator& comm) {
    const int begin = comm.rank() == 0 ? 0 : 100, n = comm.rank() == 0 ? 100 : 28;
    auto m = nn::make_model("lenet", {1, 28, 28}, 10, 5);
    nn::Context rc = ctx;
    rc.sample_ids = ids.data() + begin;
    m->loss_and_grads(d.train.image(static_cast<std::size_t>(begin)), d.train.labels.data() + begin, n, rc);
    std::vector<float> g(m->grads().begin(), m->grads().end());
    comm.allreduce_sum(g);
    std::lock_guard lock(mu);
    if (comm.rank() == 0) got = g;
  });
  const double scale = max_abs(expect);
  MESSAGE("max |grad| " << scale << ", difference " << max_diff(expect, got));
  CHECK(scale > 0);
  CHECK(max_diff(expect, got) <= 1e-5 * scale);
}

TEST_CASE("Train.Resume.EndsWithTheSameParameters") {
  const auto dir = std::filesystem::temp_directory_path() / "dbs-train-resume-test";
  std::filesystem::remove_all(dir);
  train::Config c = small_config("lenet", 1024);
  c.epochs = 3;
  c.policy = "fixed:40,88";  // dbs plans follow measured times, which differ run to run
  const std::vector<float> straight = run_local(c, 2);

  train::Config first = c;
  first.epochs = 1;
  first.checkpoint_dir = dir.string();
  run_local(first, 2);
  REQUIRE(std::filesystem::exists(dir / "checkpoint.bin"));
  train::Config rest = c;
  rest.checkpoint_dir = dir.string();
  rest.resume = true;
  const std::vector<float> resumed = run_local(rest, 2);
  CHECK(resumed == straight);  // bit for bit: kernels are deterministic at any thread count
  std::filesystem::remove_all(dir);
}

TEST_CASE("Train.Resume.RefusesAnotherRunsCheckpoint") {
  const auto dir = std::filesystem::temp_directory_path() / "dbs-train-resume-mismatch";
  std::filesystem::remove_all(dir);
  train::Config c = small_config("lenet", 512);
  c.checkpoint_dir = dir.string();
  run_local(c, 1);
  train::Config other = c;
  other.global_batch = 64;
  other.schedule.global_batch = 64;
  other.resume = true;
  other.epochs = 2;
  CHECK_THROWS_WITH(run_local(other, 1), doctest::Contains("checkpoint is of another run"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("Train.RankException.AbortsTheOthers") {
  // Rank 1 fails before its first collective; rank 0, blocked in one, must not hang: it gets
  // CommError and the group rethrows rank 1's exception.
  train::Config c = small_config("lenet", 512);
  c.epochs = 2;
  CHECK_THROWS_WITH(comm::LocalGroup::run(2, [&](comm::Communicator& comm) {
    if (comm.rank() == 1) throw std::runtime_error("rank 1 failed");
    train::run(c, comm, fashion());
  }), "rank 1 failed");
}
