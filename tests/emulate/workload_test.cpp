// The emulated rank (lib/emulate): its step cost, the model that waits it, and the network that
// stretches the gradient exchange.
#include <doctest/doctest.h>

#include <cmath>
#include <numeric>
#include <vector>

#include "lib/comm/local.h"
#include "lib/common/timer.h"
#include "lib/emulate/link.h"
#include "lib/emulate/workload.h"

namespace {

using namespace dbs;
using nlohmann::json;

replay::Spec spec_of(const std::string& text) { return replay::parse_spec(json::parse(text), "s.json"); }

}  // namespace

TEST_CASE("Emulate.StepCost.AlphaPlusBetaB") {
  const replay::Spec s = spec_of(R"({"epochs": 2,
      "nodes": [{"alpha_s": 0.01, "beta_s": 0.002}, {"throughput": 250}]})");
  const emulate::StepCost first(s, 0), second(s, 1);
  CHECK(first.seconds(0, 10, 0) == doctest::Approx(0.01 + 10 * 0.002));
  CHECK(first.seconds(1, 3, 77) == doctest::Approx(0.01 + 3 * 0.002));
  CHECK(second.seconds(0, 10, 5) == doctest::Approx(10 / 250.0));
  CHECK(second.seconds(9, 10, 5) == doctest::Approx(10 / 250.0));  // past the spec: its last
}

TEST_CASE("Emulate.StepCost.StepNoiseHasMeanOneAndTheSpreadAsked") {
  const replay::Spec s = spec_of(R"({"epochs": 1, "step_noise": 0.2, "seed": 3,
      "nodes": [{"count": 2, "beta_s": 0.001}]})");
  const emulate::StepCost cost(s, 1);
  constexpr int kDraws = 20000;
  double sum = 0, sum_log = 0, sum_log2 = 0;
  for (int k = 0; k < kDraws; ++k) {
    const double f = cost.seconds(0, 100, k) / 0.1;
    sum += f;
    sum_log += std::log(f);
    sum_log2 += std::log(f) * std::log(f);
  }
  const double mean_log = sum_log / kDraws;
  CHECK(sum / kDraws == doctest::Approx(1.0).epsilon(0.005));  // exp(0.2 z) alone: 1.02
  CHECK(std::sqrt(sum_log2 / kDraws - mean_log * mean_log) == doctest::Approx(0.2).epsilon(0.03));
  // A step costs the same every time it is asked; another rank's, another step's differ.
  CHECK(cost.seconds(0, 100, 42) == cost.seconds(0, 100, 42));
  CHECK(cost.seconds(0, 100, 42) != cost.seconds(0, 100, 43));
  CHECK(cost.seconds(0, 100, 42) != emulate::StepCost(s, 0).seconds(0, 100, 42));
}

TEST_CASE("Emulate.Workload.ForwardAndBackwardWaitTheCostAndSumTheCount") {
  const replay::Spec s = spec_of(R"({"epochs": 1, "samples_per_epoch": 50, "params": 1001,
      "nodes": [{"alpha_s": 0.02, "beta_s": 0.001}, {"speed": 1}]})");
  emulate::Workload w = emulate::make_workload(s, 0, 1);
  CHECK(w.samples.train.n == 50);
  CHECK(w.samples.test.n == 0);
  REQUIRE(w.model->param_count() == 1001);
  std::vector<std::int64_t> ids(10);
  std::iota(ids.begin(), ids.end(), 0);
  nn::Context ctx;
  ctx.training = true;
  ctx.sample_ids = ids.data();
  const Stopwatch clock;
  const double loss =
      w.model->loss_and_grads(w.samples.train.image(0), w.samples.train.labels.data(), 10, ctx);
  const double took = clock.seconds();
  CHECK(loss == 0);
  CHECK(took >= 0.03);
  for (const float g : w.model->grads()) REQUIRE(g == 10.0f);
  const emulate::Pace pace = emulate::pace_of(*w.pacer);
  CHECK(pace.steps == 1);
  CHECK(pace.requested_s == doctest::Approx(0.03));
  CHECK(pace.taken_s >= 0.03);
  CHECK(pace.taken_s <= took);
  CHECK(pace.late_s >= 0);
  // Evaluation (not training) is free: no wait, nothing counted.
  ctx.training = false;
  w.model->forward(w.samples.train.image(0), 10, ctx);
  CHECK(emulate::pace_of(*w.pacer).steps == 1);
}

TEST_CASE("Emulate.Workload.CpuShareIsSpentComputing") {
  const replay::Spec s = spec_of(R"({"epochs": 1, "samples_per_epoch": 50, "params": 10,
      "cpu_share": 0.5, "nodes": [{"beta_s": 0.004}]})");
  emulate::Workload w = emulate::make_workload(s, 0, 1);
  std::vector<std::int64_t> ids(10, 0);
  nn::Context ctx;
  ctx.training = true;
  ctx.sample_ids = ids.data();
  w.model->loss_and_grads(w.samples.train.image(0), w.samples.train.labels.data(), 10, ctx);
  const emulate::Pace pace = emulate::pace_of(*w.pacer);
  CHECK(pace.cpu_s >= 0.02);        // half of the 40 ms computed
  CHECK(pace.taken_s >= 0.04);
}

TEST_CASE("Emulate.Network.GradientExchangeWaitsTheRingModel") {
  // 4 ranks, 1,000 floats, 10 ms a message: 2 * 3 messages = 60 ms an allreduce.
  const replay::Spec s = spec_of(R"({"epochs": 1, "speeds": [1, 1, 1, 1], "latency_s": 0.001,
      "network": [{"rank": 2, "latency_s": 0.01}]})");
  const double model = replay::ring_allreduce_s(4, 4000, 0.01, 1.25e9);
  CHECK(model == doctest::Approx(0.06 + 6.0 / 4 * 4000 / 1.25e9));
  std::vector<double> allreduce(4), halves(4), started(4);
  std::vector<float> sums(4);
  comm::LocalGroup::run(4, [&](comm::Communicator& inner) {
    const auto c = emulate::with_network(inner, s);
    const auto r = static_cast<std::size_t>(c->rank());
    std::vector<float> data(1000, 1.0f);
    Stopwatch clock;
    c->allreduce_sum(data);
    allreduce[r] = clock.seconds();
    sums[r] = data[999];
    const std::vector<std::size_t> counts{250, 250, 250, 250};
    clock.reset();
    c->reduce_scatter_sum(data, counts);
    c->allgather_segments(data, counts);
    halves[r] = clock.seconds();
    clock.reset();
    c->start_allreduce_sum(std::span<float>(data).first(500));
    c->start_allreduce_sum(std::span<float>(data).last(500));
    c->finish();
    started[r] = clock.seconds();
  });
  for (std::size_t r = 0; r < 4; ++r) {
    CHECK(sums[r] == 4.0f);
    CHECK(allreduce[r] >= model);
    CHECK(halves[r] >= model);
    CHECK(started[r] >= model);
  }
}
