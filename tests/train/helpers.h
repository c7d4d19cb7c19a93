// Shared helpers of the training tests: a small Fashion-MNIST, a small config, and runs on
// in-process ranks.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <vector>

#include "lib/comm/local.h"
#include "lib/data/dataset.h"
#include "lib/planner/planner.h"
#include "lib/train/trainer.h"

namespace dbs::train::test {

inline const data::FashionMnist& fashion() {
  static const data::FashionMnist d = [] {
    data::FashionMnist f = data::load_fashion_mnist();
    f.train = f.train.head(4096);
    f.test = f.test.head(512);
    return f;
  }();
  return d;
}

inline Config small_config(const std::string& model, int samples) {
  Config c;
  c.model = model;
  c.epochs = 1;
  c.global_batch = 128;
  c.train_limit = static_cast<std::size_t>(samples);
  c.test_limit = 256;
  c.progress = false;
  c.seed = 7;
  return c;
}

// Makes rank `rank`'s planner for a run (nullptr: the trainer's embedded one).
using PlannerFactory = std::function<std::unique_ptr<Planner>(int rank)>;

// Runs the config on `world` in-process ranks; returns rank 0's result (and checks every rank
// ended with the same parameters).
inline RunResult run_ranks(const Config& c, int world, const PlannerFactory& make = nullptr) {
  std::vector<RunResult> out(static_cast<std::size_t>(world));
  comm::LocalGroup::run(world, [&](comm::Communicator& comm) {
    std::unique_ptr<Planner> p = make ? make(comm.rank()) : nullptr;
    out[static_cast<std::size_t>(comm.rank())] = run(c, comm, fashion(), p.get());
  });
  for (int r = 1; r < world; ++r) REQUIRE(out[static_cast<std::size_t>(r)].params == out[0].params);
  return out[0];
}

// Plans from a list, in turn: the next at every epoch end and every re-plan inside an epoch, so
// both kinds of slice change happen, at times that do not depend on the clock.
class PlanCycle : public Planner {
 public:
  explicit PlanCycle(std::vector<std::vector<int>> batches) : batches_(std::move(batches)) {
    plan_ = make(0, 0);
  }
  const Plan& plan() const override { return plan_; }
  Planned next(std::span<const Report>) override {
    plan_ = make(plan_.epoch + 1, ++at_);
    return {plan_, "cycle"};
  }
  std::optional<Planned> rebalance(std::span<const Report>) override {
    plan_ = make(plan_.epoch, ++at_);
    return Planned{plan_, "rebalance"};
  }
  std::vector<double> state() const override { return {static_cast<double>(at_)}; }
  void set_state(const Plan& plan, const std::vector<double>& state) override {
    plan_ = plan;
    at_ = static_cast<std::size_t>(state.at(0));
  }

 private:
  Plan make(std::int64_t epoch, std::size_t k) const {
    Plan p;
    p.epoch = epoch;
    p.batch = batches_[k % batches_.size()];
    p.global_batch = std::accumulate(p.batch.begin(), p.batch.end(), 0);
    int o = 0;
    for (const int b : p.batch) {
      p.offset.push_back(o);
      o += b;
    }
    return p;
  }
  std::vector<std::vector<int>> batches_;
  std::size_t at_ = 0;
  Plan plan_;
};

// Every rank's PlanCycle over the same list.
inline PlannerFactory plan_cycle(std::vector<std::vector<int>> batches) {
  return [batches](int) { return std::make_unique<PlanCycle>(batches); };
}

inline std::vector<float> run_local(const Config& c, int world) {
  return run_ranks(c, world).params;
}

inline double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max(m, std::fabs(static_cast<double>(x)));
  return m;
}

inline double max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    m = std::max(m, std::fabs(static_cast<double>(a[i]) - static_cast<double>(b[i])));
  return m;
}

}  // namespace dbs::train::test
