// Periodic model averaging (local SGD, Settings::average_every) on the in-process communicator:
// one average is the sample-weighted mean of the ranks' models; an averaging epoch is each
// rank's own training on its slices followed by that mean; averaging after every step with
// plain SGD is synchronous SGD; the optimizer state stays local or is averaged; resume, re-plans
// at the averages and the options averaging cannot serve.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <numeric>

#include "lib/data/sampler.h"
#include "lib/nn/model.h"
#include "lib/optim/optimizer.h"
#include "lib/optim/schedule.h"
#include "lib/policy/steps.h"
#include "lib/train/config.h"
#include "lib/train/local_sgd.h"
#include "tests/train/helpers.h"

using namespace dbs;
using namespace dbs::train::test;

namespace {

// Plans of unequal sizes that change at epoch ends and, with rebalance_every, inside epochs; a
// rank with an empty slice among them.
const std::vector<std::vector<int>> kPlans = {{100, 28}, {40, 88}, {128, 0}, {64, 64}};

train::Config plain_sgd(int samples) {
  train::Config c = small_config("lenet", samples);
  c.optimizer = "sgd";
  c.optim.momentum = 0;
  c.optim.weight_decay = 1e-4;
  c.schedule.base_lr = 0.05;
  return c;
}

// x[k][j] = (k + 1) * sin(j + 7 r) + r: vectors that differ from rank to rank.
void fill_rank(std::span<float> x, int r, std::size_t k) {
  for (std::size_t j = 0; j < x.size(); ++j)
    x[j] = static_cast<float>((k + 1) * std::sin(static_cast<double>(j + 7 * r)) + r);
}

// Rank `rank`'s own training over one epoch under a fixed plan: its slice of every global step,
// its optimizer on the slice's mean gradient, as dbs-agent's averaging epoch runs it between
// averages (lenet has no dropout; the context is the trainer's all the same).
std::vector<float> own_epoch(const train::Config& c, const std::vector<int>& batch, int rank,
                             std::int64_t epoch, std::vector<float> params,
                             optim::Optimizer& optimizer) {
  const data::Dataset& train = fashion().train;
  const auto n = static_cast<std::int64_t>(c.train_limit);
  const auto model = nn::make_model(c.model, {1, train.rows, train.cols}, train.classes, c.seed);
  std::copy(params.begin(), params.end(), model->params().begin());
  Plan plan;
  plan.global_batch = c.global_batch;
  plan.batch = batch;
  plan.offset = offsets_of(batch);
  const std::vector<std::int64_t> perm =
      data::EpochSampler(static_cast<std::size_t>(n), c.seed).permutation(static_cast<std::uint64_t>(epoch));
  const std::int64_t steps = (n + c.global_batch - 1) / c.global_batch;
  const std::size_t px = train.pixels();
  for (std::int64_t s = 0; s < steps; ++s) {
    const std::int64_t g0 = s * c.global_batch;
    const int gn = static_cast<int>(std::min<std::int64_t>(c.global_batch, n - g0));
    const std::vector<int> split = step_batch(plan, gn);
    const int count = split[static_cast<std::size_t>(rank)];
    const int offset = std::accumulate(split.begin(), split.begin() + rank, 0);
    if (count == 0) continue;
    std::vector<float> x(static_cast<std::size_t>(count) * px);
    std::vector<std::int32_t> labels(static_cast<std::size_t>(count));
    std::vector<std::int64_t> ids(static_cast<std::size_t>(count));
    for (int j = 0; j < count; ++j) {
      const std::int64_t idx = perm[static_cast<std::size_t>(g0 + offset + j)];
      std::copy_n(train.image(static_cast<std::size_t>(idx)), px, x.data() + j * px);
      labels[static_cast<std::size_t>(j)] = train.labels[static_cast<std::size_t>(idx)];
      ids[static_cast<std::size_t>(j)] = idx;
    }
    nn::Context ctx;
    ctx.training = true;
    ctx.seed = c.seed;
    ctx.epoch = static_cast<std::uint64_t>(epoch);
    ctx.sample_ids = ids.data();
    model->loss_and_grads(x.data(), labels.data(), count, ctx);
    const double lr = optim::learning_rate(c.schedule, c.global_batch,
                                           static_cast<double>(epoch) + static_cast<double>(s) / static_cast<double>(steps));
    optimizer.step(model->params(), model->grads(), lr, 1.0 / count);
  }
  return {model->params().begin(), model->params().end()};
}

}  // namespace

// Three ranks with different parameters and moments, weights 100, 28 and 0: every rank ends with
// sum_r w_r x_r / sum_r w_r of the parameters, and of the moments only when they are averaged;
// the tail comes back summed. A mean with equal weights, or one that took the weight-0 rank in,
// is off by a large fraction of the values.
TEST_CASE("LocalSgd.OneAverage.IsTheSampleWeightedMeanOfTheRanksModels") {
  const std::vector<float> w = {100, 28, 0};
  for (const bool state : {false, true}) {
    CAPTURE(state);
    std::vector<std::vector<float>> params(3), moments(3), tails(3);
    comm::LocalGroup::run(3, [&](comm::Communicator& comm) {
      const int r = comm.rank();
      const auto model = nn::make_model("lenet", {1, 28, 28}, 10, 7);
      const auto opt = optim::make_optimizer("adam", model->param_count());
      fill_rank(model->params(), r, 0);
      const std::vector<std::span<float>> m = opt->state_vectors();
      for (std::size_t k = 0; k < m.size(); ++k) fill_rank(m[k], r, k + 1);
      train::LocalSgd local(comm, *model, *opt, state, 4);
      const std::span<float> tail = local.tail(2);
      tail[0] = w[static_cast<std::size_t>(r)];
      tail[1] = static_cast<float>(r + 1);
      local.average();
      const auto i = static_cast<std::size_t>(r);
      params[i].assign(model->params().begin(), model->params().end());
      moments[i].assign(m[1].begin(), m[1].end());
      tails[i].assign(tail.begin(), tail.end());
    });
    const std::size_t P = params[0].size();
    double off = 0, scale = 0;
    // The expected mean, computed from the same fills in double.
    std::vector<std::vector<float>> p0(3, std::vector<float>(P)), v0(3, std::vector<float>(P));
    for (int r = 0; r < 3; ++r) {
      fill_rank(p0[static_cast<std::size_t>(r)], r, 0);
      fill_rank(v0[static_cast<std::size_t>(r)], r, 2);
    }
    for (std::size_t j = 0; j < P; ++j) {
      const double mean = (100.0 * static_cast<double>(p0[0][j]) + 28.0 * static_cast<double>(p0[1][j])) / 128.0;
      off = std::max(off, std::fabs(static_cast<double>(params[0][j]) - mean));
      scale = std::max(scale, std::fabs(mean));
    }
    MESSAGE("parameters off the weighted mean by at most " << off << " (max |mean| " << scale << ")");
    CHECK(off <= 1e-6 * scale);
    CHECK(params[1] == params[0]);
    CHECK(params[2] == params[0]);
    // An equal-weight mean differs by far more.
    CHECK(std::fabs(params[0][1] - (p0[0][1] + p0[1][1] + p0[2][1]) / 3.0f) > 0.1f);
    // The moments: averaged, or each rank's own.
    double moff = 0;
    for (std::size_t j = 0; j < P; ++j)
      moff = std::max(moff, std::fabs(static_cast<double>(moments[1][j]) -
                                      (100.0 * static_cast<double>(v0[0][j]) + 28.0 * static_cast<double>(v0[1][j])) / 128.0));
    if (state) {
      CHECK(moff <= 1e-6 * scale);
      CHECK(moments[0] == moments[2]);
    } else {
      CHECK(moments[1] == v0[1]);
      CHECK(moments[2] == v0[2]);
    }
    CHECK(tails[0] == std::vector<float>{128, 6});
    CHECK(tails[2] == tails[0]);
  }
}

// One averaging epoch whose only average is its last (H above the 8 steps), under 100/28 with
// Adam: each rank trains alone on its slices of every global step with its own optimizer, and
// the epoch ends at the weighted mean of the two models, weights 1000 * 100 / 128 and the rest
// (the short last step split 81/23). Computed here step by step with the model and optimizer
// directly, it must match the trainer's result to rounding.
TEST_CASE("LocalSgd.Epoch.IsEachRanksOwnTrainingThenTheWeightedMean") {
  train::Config c = small_config("lenet", 1000);
  c.optimizer = "adam";
  c.policy = dbs::parse_policy("fixed:100,28");
  c.average_every = 16;
  const train::RunResult run = run_ranks(c, 2);
  CHECK(run.epochs.at(0).averages == 1);

  const auto init = nn::make_model(c.model, {1, 28, 28}, 10, c.seed);
  const std::vector<float> p0(init->params().begin(), init->params().end());
  std::vector<std::vector<float>> own;
  for (int r = 0; r < 2; ++r) {
    const auto opt = optim::make_optimizer(c.optimizer, p0.size(), c.optim);
    own.push_back(own_epoch(c, {100, 28}, r, 0, p0, *opt));
  }
  // Samples per rank: 7 full steps of 100 / 28, and the short step of 104 split 81 / 23.
  const std::vector<float> weight = {7 * 100 + 81, 7 * 28 + 23};
  double off = 0, apart = 0;
  for (std::size_t j = 0; j < p0.size(); ++j) {
    const float mean = (weight[0] * own[0][j] + weight[1] * own[1][j]) / (weight[0] + weight[1]);
    off = std::max(off, std::fabs(static_cast<double>(run.params[j] - mean)));
    apart = std::max(apart, std::fabs(static_cast<double>(own[0][j] - own[1][j])));
  }
  const double scale = max_abs(run.params);
  MESSAGE("trainer off the weighted mean of the ranks' own models by " << off << ", the two models "
          "apart by up to " << apart << ", max |param| " << scale);
  CHECK(apart > 1e-3 * scale);  // the ranks' models did differ before the average
  CHECK(off <= 1e-6 * scale);
}

// Averaging after every step with plain SGD (no momentum: no optimizer state) is the
// synchronous update: sum_r (b_r / B)(theta - lr g_r / b_r) = theta - lr sum_r g_r / B, and
// weight decay is linear too. Under plans that change at epoch ends and inside epochs (an empty
// slice among them), 2 epochs of lenet: the parameters agree within 2e-5 x the largest (float
// summation order), the train loss within 1e-5 relative. Averaging every 4 steps is not the
// synchronous update: it differs by far more than that.
TEST_CASE("LocalSgd.EveryStepWithPlainSgd.IsSynchronousSgd") {
  train::Config c = plain_sgd(1000);
  c.epochs = 2;
  c.rebalance_every = 4;
  const train::RunResult sync = run_ranks(c, 2, plan_cycle(kPlans));
  c.average_every = 1;
  const train::RunResult h1 = run_ranks(c, 2, plan_cycle(kPlans));
  c.average_every = 4;
  const train::RunResult h4 = run_ranks(c, 2, plan_cycle(kPlans));
  const double scale = max_abs(sync.params);
  MESSAGE("max |param| " << scale << "; H = 1 differs from synchronous by " << max_diff(sync.params, h1.params)
                         << ", H = 4 by " << max_diff(sync.params, h4.params));
  CHECK(max_diff(sync.params, h1.params) <= 2e-5 * scale);
  CHECK(max_diff(sync.params, h4.params) > 1e-3 * scale);
  CHECK(h1.epochs.back().train_loss == doctest::Approx(sync.epochs.back().train_loss).epsilon(1e-5));
  CHECK(h1.epochs.at(0).averages == 8);
  CHECK(h4.epochs.at(0).averages == 2);
  CHECK(h1.epochs.at(0).replans == sync.epochs.at(0).replans);
  CHECK(sync.epochs.at(0).averages == 0);
}

// The post-local schedule: the first average_after_epochs epochs are synchronous (bit for bit
// the synchronous run's), the later ones average every H steps and at the epoch's end.
TEST_CASE("LocalSgd.AfterEpochs.SynchronousFirst") {
  train::Config c = small_config("lenet", 1000);
  c.policy = dbs::parse_policy("fixed:100,28");
  c.epochs = 1;
  const train::RunResult sync1 = run_ranks(c, 2);
  c.epochs = 2;
  c.average_every = 3;
  c.average_after_epochs = 1;
  const train::RunResult post = run_ranks(c, 2);
  CHECK(post.epochs.at(0).averages == 0);
  CHECK(post.epochs.at(1).averages == 3);  // after steps 3 and 6 and the last, 8
  CHECK(post.epochs.at(0).train_loss == sync1.epochs.at(0).train_loss);
  CHECK(post.epochs.at(0).test_acc == sync1.epochs.at(0).test_acc);
}

// With --overlap, the synchronous first epochs exchange the gradient inside the backward pass
// and the averaging epochs compute without any exchange: bit for bit the run without overlap.
// Across hosts auto turns the overlap on where a synchronous epoch comes first, not without one.
TEST_CASE("LocalSgd.AfterEpochs.OverlapsTheSynchronousEpochs") {
  train::Config c = small_config("lenet", 1000);
  c.policy = dbs::parse_policy("fixed:100,28");
  c.epochs = 2;
  c.average_every = 3;
  c.average_after_epochs = 1;
  const train::RunResult plain = run_ranks(c, 2);
  c.overlap = "on";
  const train::RunResult overlapped = run_ranks(c, 2);
  CHECK(overlapped.params == plain.params);
  CHECK(overlapped.epochs.at(0).train_loss == plain.epochs.at(0).train_loss);
  CHECK(overlapped.epochs.at(1).averages == 3);
  c.overlap = "auto";
  const std::vector<std::string> two = {"node1", "node2"};
  CHECK(train::resolve_overlap(c, two));
  c.average_after_epochs = 0;
  CHECK_FALSE(train::resolve_overlap(c, two));
}

// Resumed between epochs, an averaging run ends with the uninterrupted run's parameters bit for
// bit: the checkpoint holds every rank's own Adam moments (without them rank 1 would continue
// from rank 0's), or the averaged ones; the averages fall at the same steps.
TEST_CASE("LocalSgd.Resume.EndsWithTheSameParameters") {
  for (const std::string state : {"local", "mean"}) {
    CAPTURE(state);
    const auto dir = std::filesystem::temp_directory_path() / ("dbs-train-local-resume-" + state);
    std::filesystem::remove_all(dir);
    train::Config c = small_config("lenet", 1000);
    c.epochs = 3;
    c.policy = dbs::parse_policy("fixed:40,88");
    c.average_every = 3;
    c.average_after_epochs = 1;
    c.average_optimizer = state;
    const train::RunResult straight = run_ranks(c, 2);

    train::Config first = c;
    first.epochs = 2;
    first.checkpoint_dir = dir.string();
    run_ranks(first, 2);
    train::Config rest = c;
    rest.checkpoint_dir = dir.string();
    rest.resume = true;
    const train::RunResult resumed = run_ranks(rest, 2);
    CHECK(resumed.params == straight.params);
    CHECK(resumed.epochs.back().averages == straight.epochs.back().averages);
    std::filesystem::remove_all(dir);
  }
}

// With rebalance_every a multiple of H, the planner is asked after every K-th step, at an
// average, with every rank's figures of the steps since the last re-plan: their samples are the
// plan's batch sizes times K.
TEST_CASE("LocalSgd.RebalanceEvery.ReplansAtTheAveragesWithEveryRanksSteps") {
  class Recorder : public PlanCycle {
   public:
    using PlanCycle::PlanCycle;
    std::optional<Planned> rebalance(std::span<const Report> window) override {
      for (const Report& r : window) samples.push_back({r.rank, r.samples, r.steps});
      return PlanCycle::rebalance(window);
    }
    std::vector<std::array<std::int64_t, 3>> samples;  // (rank, samples, steps) per re-plan
  };
  train::Config c = small_config("lenet", 1000);
  c.average_every = 2;
  c.rebalance_every = 4;
  std::vector<std::vector<std::array<std::int64_t, 3>>> seen(2);
  comm::LocalGroup::run(2, [&](comm::Communicator& comm) {
    Recorder planner(kPlans);
    train::run(c, comm, fashion(), &planner);
    seen[static_cast<std::size_t>(comm.rank())] = planner.samples;
  });
  // 8 steps: re-plans after steps 4 (plan 100/28 in force) and never after the last.
  using Row = std::array<std::int64_t, 3>;
  CHECK(seen[0] == std::vector<Row>{{0, 400, 4}, {1, 112, 4}});
  CHECK(seen[1] == seen[0]);
}

TEST_CASE("LocalSgd.RefusesWhatItCannotServe") {
  const auto refused = [](const std::function<void(train::Config&)>& set) {
    train::Config c = small_config("lenet", 256);
    c.average_every = 4;
    set(c);
    try {
      run_local(c, 2);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(refused([](train::Config& c) { c.update = "sharded"; }) ==
        "--average-every works with --update replicated (a local step needs the whole optimizer "
        "state on every rank)");
  CHECK(refused([](train::Config& c) { c.overlap = "on"; }) ==
        "--overlap with --average-every needs --average-after-epochs E > 0 (only the synchronous "
        "epochs exchange a gradient to overlap)");
  CHECK(refused([](train::Config& c) { c.rebalance_every = 6; }) ==
        "--rebalance-every 6 is not a multiple of --average-every 4 (under model averaging the "
        "ranks learn each other's step times at the averages)");
  CHECK(refused([](train::Config& c) { c.average_every = -1; }) ==
        "--average-every must be >= 1 (steps between model averages), got -1");
  CHECK(refused([](train::Config& c) { c.average_optimizer = "median"; }) ==
        "--average-optimizer 'median': expected local or mean");
  CHECK(refused([](train::Config& c) {
          c.average_every = 0;
          c.average_after_epochs = 2;
        }) == "--average-after-epochs needs --average-every H");
  // auto resolves to no overlap: the averaging epochs have no gradient exchange.
  train::Config c = small_config("lenet", 256);
  c.average_every = 4;
  CHECK_FALSE(train::resolve_overlap(c, std::vector<std::string>{"a", "b"}));
  CHECK(refused([](train::Config&) {}) == "accepted");
}
