#include "lib/optim/optimizer.h"

#include <doctest/doctest.h>
#include <tbb/global_control.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "lib/common/error.h"

namespace {

using dbs::optim::make_optimizer;
using dbs::optim::Optimizer;
using dbs::optim::OptimizerConfig;
using Vec = std::vector<float>;

const std::vector<std::string> kNames = {"sgd", "adam", "rmsprop"};

// Three gradient steps on a two-parameter vector starting at p = (1, -2).
const std::vector<Vec> kGrads = {{0.5f, -1.0f}, {-0.25f, 2.0f}, {1.0f, 0.1f}};

void check_close(const Vec& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    CHECK(static_cast<double>(got[i]) == doctest::Approx(want[i]).epsilon(1e-6));
}

// p[i] = sin-like deterministic values in [-1, 1); g likewise with another phase.
Vec pattern(std::size_t n, std::size_t phase) {
  Vec v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = static_cast<float>((i * 7919 + phase * 104729) % 2000) / 1000.0f - 1.0f;
  return v;
}

std::string saved(const Optimizer& opt) {
  std::ostringstream os;
  opt.save(os);
  return os.str();
}

void load(Optimizer& opt, const std::string& bytes) {
  std::istringstream is(bytes);
  opt.load(is);
}

}  // namespace

TEST_CASE("Sgd.Step.MatchesHandComputed") {
  // v = 0.9 v + g; p -= 0.1 v, with g = (0.5, 1) every step.
  auto opt = make_optimizer("sgd", 2);
  Vec p = {1.0f, -2.0f};
  const Vec g = {0.5f, 1.0f};
  opt->step(p, g, 0.1, 1.0);
  check_close(p, {0.95, -2.1});  // v = (0.5, 1)
  opt->step(p, g, 0.1, 1.0);
  check_close(p, {0.855, -2.29});  // v = (0.95, 1.9)
  opt->step(p, g, 0.1, 1.0);
  check_close(p, {0.7195, -2.561});  // v = (1.355, 2.71)
}

TEST_CASE("Sgd.WeightDecay.AddsToGradient") {
  OptimizerConfig config;
  config.momentum = 0.0;
  config.weight_decay = 0.1;
  auto opt = make_optimizer("sgd", 1, config);
  Vec p = {1.0f};
  opt->step(p, Vec{0.5f}, 0.1, 1.0);
  check_close(p, {0.94});  // g = 0.5 + 0.1 * 1
}

TEST_CASE("Sgd.Momentum0.EqualsPlainSgd") {
  OptimizerConfig config;
  config.momentum = 0.0;
  auto opt = make_optimizer("sgd", 2, config);
  Vec p = {1.0f, -2.0f};
  std::vector<double> want = {1.0, -2.0};
  for (const Vec& g : kGrads) {
    opt->step(p, g, 0.1, 1.0);
    for (std::size_t i = 0; i < 2; ++i) want[i] -= 0.1 * static_cast<double>(g[i]);
    check_close(p, want);
  }
}

TEST_CASE("Adam.Step.MatchesHandComputed") {
  // Step 1: m_hat = g and v_hat = g^2, so p -= lr * sign(g). Later steps from
  // m = 0.9 m + 0.1 g, v = 0.999 v + 0.001 g^2, p -= lr m/(1-0.9^t) / (sqrt(v/(1-0.999^t)) + eps).
  auto opt = make_optimizer("adam", 2);
  Vec p = {1.0f, -2.0f};
  opt->step(p, kGrads[0], 0.1, 1.0);
  check_close(p, {0.9, -1.9});
  opt->step(p, kGrads[1], 0.1, 1.0);
  check_close(p, {0.873366299, -1.93661035});
  opt->step(p, kGrads[2], 0.1, 1.0);
  check_close(p, {0.80755514, -1.96773769});
}

TEST_CASE("RmsProp.Step.MatchesHandComputed") {
  // Step 1: s = 0.01 g^2, so p -= lr * g / (0.1 |g|) = 10 lr sign(g). Later steps from
  // s = 0.99 s + 0.01 g^2, p -= lr g / (sqrt(s) + eps).
  auto opt = make_optimizer("rmsprop", 2);
  Vec p = {1.0f, -2.0f};
  opt->step(p, kGrads[0], 0.01, 1.0);
  check_close(p, {0.9, -1.9});
  opt->step(p, kGrads[1], 0.01, 1.0);
  check_close(p, {0.944901337, -1.9895323});
  opt->step(p, kGrads[2], 0.01, 1.0);
  check_close(p, {0.857427378, -1.99402692});
}

TEST_CASE("Optimizer.GradScale.SummedGradientsMatchMean") {
  OptimizerConfig config;
  config.weight_decay = 0.01;
  for (const std::string& name : kNames) {
    CAPTURE(name);
    for (const float k : {8.0f, 3.0f}) {
      CAPTURE(k);
      auto mean_opt = make_optimizer(name, 2, config);
      auto sum_opt = make_optimizer(name, 2, config);
      Vec p_mean = {1.0f, -2.0f};
      Vec p_sum = p_mean;
      for (const Vec& g : kGrads) {
        const Vec g_sum = {g[0] * k, g[1] * k};
        mean_opt->step(p_mean, g, 0.01, 1.0);
        sum_opt->step(p_sum, g_sum, 0.01, 1.0 / static_cast<double>(k));
      }
      if (k == 8.0f) {
        CHECK(p_sum == p_mean);  // scaling by a power of two is exact
      } else {
        check_close(p_sum, {static_cast<double>(p_mean[0]), static_cast<double>(p_mean[1])});
      }
    }
  }
}

TEST_CASE("Adam.Quadratic.ConvergesToMinimum") {
  // f(p) = sum_i a_i (p_i - c_i)^2 / 2, badly conditioned on purpose.
  const Vec a = {1.0f, 10.0f, 0.1f};
  const Vec c = {3.0f, -1.0f, 0.5f};
  auto opt = make_optimizer("adam", 3);
  Vec p = {0.0f, 0.0f, 0.0f};
  Vec g(3);
  for (int t = 0; t < 500; ++t) {
    for (std::size_t i = 0; i < 3; ++i) g[i] = a[i] * (p[i] - c[i]);
    opt->step(p, g, 0.05, 1.0);
  }
  for (std::size_t i = 0; i < 3; ++i) CHECK(p[i] == doctest::Approx(c[i]).epsilon(1e-3));
}

TEST_CASE("Optimizer.Step.SameResultAt1And2Threads") {
  const std::size_t n = 100000;  // above the parallel grain, so the range is split
  const Vec g = pattern(n, 1);
  for (const std::string& name : kNames) {
    CAPTURE(name);
    std::vector<Vec> results;
    for (const std::size_t threads : {std::size_t{1}, std::size_t{2}}) {
      tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads);
      auto opt = make_optimizer(name, n);
      Vec p = pattern(n, 0);
      for (int t = 0; t < 3; ++t) opt->step(p, g, 0.01, 0.5);
      results.push_back(p);
    }
    CHECK(results[0] == results[1]);
  }
}

// A sharded update: three "ranks" each step their own range of the parameters; after every step
// the slices are put together (parameters and moments, as the trainer's allgathers do) and the
// slices move. Equal, bit for bit, to one optimizer stepping everything, for every rule, over
// ranges on and off the parallel grain, including an empty one.
TEST_CASE("Optimizer.StepRange.SlicesPutTogetherAreTheWholeStep") {
  const std::size_t n = 100000;
  const std::vector<std::vector<std::size_t>> cuts = {
      {0, 33333, 66666, n}, {0, 70000, 70000, n}, {0, 1, 99999, n}, {0, 50000, 90000, n}};
  for (const std::string& name : kNames) {
    CAPTURE(name);
    OptimizerConfig config;
    config.weight_decay = 1e-3;
    auto whole = make_optimizer(name, n, config);
    std::vector<std::unique_ptr<Optimizer>> ranks;
    for (int r = 0; r < 3; ++r) ranks.push_back(make_optimizer(name, n, config));
    Vec p_whole = pattern(n, 0);
    std::vector<Vec> p_ranks(3, p_whole);
    for (std::size_t t = 0; t < cuts.size(); ++t) {
      const Vec g = pattern(n, t + 1);
      whole->step(p_whole, g, 0.01, 0.5);
      const auto& cut = cuts[t];
      for (std::size_t r = 0; r < 3; ++r) {
        const Vec before = p_ranks[r];
        ranks[r]->step_range(p_ranks[r], g, 0.01, 0.5, cut[r], cut[r + 1]);
        for (std::size_t i = 0; i < n; ++i)  // nothing outside the range moves
          if (i < cut[r] || i >= cut[r + 1]) REQUIRE(p_ranks[r][i] == before[i]);
      }
      for (std::size_t r = 0; r < 3; ++r)  // every rank gets every slice from its owner
        for (std::size_t o = 0; o < 3; ++o) {
          if (o == r) continue;
          std::copy(p_ranks[o].begin() + cut[o], p_ranks[o].begin() + cut[o + 1], p_ranks[r].begin() + cut[o]);
          auto mine = ranks[r]->state_vectors();
          auto theirs = ranks[o]->state_vectors();
          REQUIRE(mine.size() == theirs.size());
          for (std::size_t k = 0; k < mine.size(); ++k)
            std::copy(theirs[k].begin() + cut[o], theirs[k].begin() + cut[o + 1], mine[k].begin() + cut[o]);
        }
      for (std::size_t r = 0; r < 3; ++r) REQUIRE(p_ranks[r] == p_whole);
    }
    for (std::size_t r = 0; r < 3; ++r) CHECK(saved(*ranks[r]) == saved(*whole));
  }
}

TEST_CASE("Optimizer.StepRange.RejectsARangeOutside") {
  auto opt = make_optimizer("adam", 3);
  Vec p(3), g(3);
  CHECK_THROWS_AS(opt->step_range(p, g, 0.1, 1.0, 2, 4), dbs::CheckError);
  CHECK_THROWS_AS(opt->step_range(p, g, 0.1, 1.0, 2, 1), dbs::CheckError);
}

TEST_CASE("Optimizer.Step.RejectsWrongSizes") {
  auto opt = make_optimizer("adam", 3);
  Vec p(3), g(3), short_vec(2);
  CHECK_THROWS_AS(opt->step(short_vec, g, 0.1, 1.0), dbs::CheckError);
  CHECK_THROWS_AS(opt->step(p, short_vec, 0.1, 1.0), dbs::CheckError);
}

TEST_CASE("Optimizer.SaveLoad.ContinuesIdentically") {
  for (const std::string& name : kNames) {
    CAPTURE(name);
    auto original = make_optimizer(name, 2);
    Vec p = {1.0f, -2.0f};
    original->step(p, kGrads[0], 0.01, 1.0);
    original->step(p, kGrads[1], 0.01, 1.0);
    const std::string bytes = saved(*original);

    auto restored = make_optimizer(name, 2);
    load(*restored, bytes);
    CHECK(saved(*restored) == bytes);

    Vec p_restored = p;
    for (int t = 0; t < 2; ++t) {
      original->step(p, kGrads[2], 0.01, 1.0);
      restored->step(p_restored, kGrads[2], 0.01, 1.0);
    }
    CHECK(p_restored == p);
  }
}

TEST_CASE("Optimizer.Load.RejectsWrongOptimizer") {
  auto sgd = make_optimizer("sgd", 2);
  auto adam = make_optimizer("adam", 2);
  CHECK_THROWS_WITH_AS(load(*adam, saved(*sgd)),
                       "optimizer state is for optimizer 'sgd', expected 'adam'",
                       dbs::InputError);
}

TEST_CASE("Optimizer.Load.RejectsWrongCount") {
  auto four = make_optimizer("rmsprop", 4);
  auto five = make_optimizer("rmsprop", 5);
  CHECK_THROWS_WITH_AS(load(*five, saved(*four)),
                       "optimizer state has 4 parameters, expected 5", dbs::InputError);
}

TEST_CASE("Optimizer.Load.RejectsBadMagic") {
  auto opt = make_optimizer("sgd", 2);
  std::string bytes = saved(*opt);
  bytes[3] = 'X';
  CHECK_THROWS_WITH_AS(load(*opt, bytes), "optimizer state: bad magic (not a DBSOPT1 record)",
                       dbs::InputError);
}

TEST_CASE("Optimizer.Load.RejectsTruncatedAndKeepsState") {
  auto opt = make_optimizer("adam", 2);
  Vec p = {1.0f, -2.0f};
  opt->step(p, kGrads[0], 0.1, 1.0);
  const std::string before = saved(*opt);
  auto other = make_optimizer("adam", 2);
  Vec q = p;
  other->step(q, kGrads[1], 0.1, 1.0);
  const std::string full = saved(*other);

  CHECK_THROWS_WITH_AS(load(*opt, full.substr(0, 0)),
                       "optimizer state: truncated while reading magic", dbs::InputError);
  CHECK_THROWS_WITH_AS(load(*opt, full.substr(0, full.size() - 1)),
                       "optimizer state: truncated while reading moment vectors",
                       dbs::InputError);
  for (std::size_t len = 0; len < full.size(); ++len) {
    CAPTURE(len);
    CHECK_THROWS_AS(load(*opt, full.substr(0, len)), dbs::InputError);
  }
  CHECK(saved(*opt) == before);
}

TEST_CASE("Optimizer.Make.RejectsUnknownName") {
  CHECK_THROWS_WITH_AS(make_optimizer("adagrad", 3),
                       "unknown optimizer 'adagrad' (valid: sgd, adam, rmsprop)",
                       dbs::ConfigError);
}

TEST_CASE("Optimizer.Make.RejectsBadConfig") {
  OptimizerConfig config;
  config.momentum = 1.0;
  CHECK_THROWS_WITH_AS(make_optimizer("sgd", 3, config),
                       "optimizer: momentum must be in [0, 1), got 1", dbs::ConfigError);
  config = {};
  config.eps = 0.0;
  CHECK_THROWS_WITH_AS(make_optimizer("adam", 3, config), "optimizer: eps must be > 0, got 0",
                       dbs::ConfigError);
  for (const std::string& name : kNames) CHECK_NOTHROW(make_optimizer(name, 3));
}
