#include "lib/emulate/workload.h"

#include <sys/prctl.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "lib/common/error.h"
#include "lib/common/timer.h"
#include "lib/nn/layers.h"

namespace dbs::emulate {
namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A standard normal deviate from a key (Box-Muller over two hashed uniforms in (0, 1]).
double normal_of(std::uint64_t key) {
  const std::uint64_t a = splitmix64(key), b = splitmix64(a);
  const double u1 = (static_cast<double>(a >> 11) + 1.0) * 0x1p-53;
  const double u2 = (static_cast<double>(b >> 11) + 1.0) * 0x1p-53;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

timespec timespec_of(double seconds) {
  timespec t{};
  t.tv_sec = static_cast<time_t>(seconds);
  t.tv_nsec = static_cast<long>((seconds - static_cast<double>(t.tv_sec)) * 1e9);
  return t;
}

double monotonic_s() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Floating-point work on this thread until it has used `cpu_s` seconds of CPU.
void compute_for(double cpu_s) {
  const double until = cpu_seconds() + cpu_s;
  volatile double x = 1.0;
  do {
    for (int k = 0; k < 20000; ++k) x = x * 1.0000001 + 1e-9;
  } while (cpu_seconds() < until);
}

}  // namespace

StepCost::StepCost(const replay::Spec& spec, int rank)
    : step_noise_(spec.step_noise), seed_(spec.seed), rank_(rank) {
  DBS_CHECK(rank >= 0 && rank < spec.world());
  for (const auto& epoch : replay::costs_of(spec))
    by_epoch_.push_back(epoch[static_cast<std::size_t>(rank)]);
  DBS_CHECK(!by_epoch_.empty());
}

const policy::Cost& StepCost::cost(std::int64_t epoch) const {
  const auto e = static_cast<std::size_t>(
      std::clamp<std::int64_t>(epoch, 0, static_cast<std::int64_t>(by_epoch_.size()) - 1));
  return by_epoch_[e];
}

double StepCost::seconds(std::int64_t epoch, int count, std::int64_t key) const {
  const double mean = cost(epoch).at(count);
  if (step_noise_ == 0) return mean;
  std::uint64_t k = splitmix64(seed_ ^ 0x656d756c61746521ULL);
  for (const std::uint64_t part :
       {static_cast<std::uint64_t>(rank_), static_cast<std::uint64_t>(epoch),
        static_cast<std::uint64_t>(key)})
    k = splitmix64(k ^ part);
  const double s = step_noise_;
  return mean * std::exp(s * normal_of(k) - 0.5 * s * s);
}

// Paces one rank's steps: begin() at the forward, end() at the backward.
class Pacer {
 public:
  Pacer(StepCost cost, double cpu_share) : cost_(std::move(cost)), cpu_share_(cpu_share) {}

  void begin(std::int64_t epoch, int count, std::int64_t key) {
    start_ = monotonic_s();
    cpu0_ = cpu_seconds();
    const double s = count > 0 ? cost_.seconds(epoch, count, key) : 0.0;
    deadline_ = start_ + s;
    pace_.requested_s += s;
    if (cpu_share_ > 0 && s > 0) compute_for(cpu_share_ * s);
  }

  void end() {
    const double now = monotonic_s();
    if (now < deadline_) {
      const timespec at = timespec_of(deadline_);
      while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, nullptr) == EINTR) {
      }
    }
    const double woke = monotonic_s();
    if (now < deadline_) pace_.late_s += woke - deadline_;
    pace_.taken_s += woke - start_;
    pace_.cpu_s += cpu_seconds() - cpu0_;
    ++pace_.steps;
  }

  const Pace& pace() const { return pace_; }

 private:
  StepCost cost_;
  double cpu_share_;
  double start_ = 0, cpu0_ = 0, deadline_ = 0;
  Pace pace_;
};

namespace {

// The model's one layer: `params` parameters, output one logit of 0 per sample (so the loss is
// 0 and its gradient nothing), the gradient sum of every parameter the slice's sample count.
class Work final : public nn::Layer {
 public:
  Work(std::shared_ptr<Pacer> pacer, std::size_t params)
      : pacer_(std::move(pacer)), params_(params) {}
  std::string name() const override { return "synthetic"; }
  nn::Shape output_shape(nn::Shape /*in*/) const override { return {1, 1, 1}; }
  std::size_t param_count(nn::Shape /*in*/) const override { return params_; }
  void forward(const nn::Tensor& x, nn::Tensor& y, const nn::Context& ctx) override {
    y.resize(x.n, {1, 1, 1});
    std::fill(y.data.begin(), y.data.end(), 0.0f);
    if (ctx.training)
      pacer_->begin(static_cast<std::int64_t>(ctx.epoch), x.n,
                    ctx.sample_ids != nullptr && x.n > 0 ? ctx.sample_ids[0] : 0);
  }
  void backward(const nn::Tensor& /*x*/, const nn::Tensor& /*y*/, const nn::Tensor& dy,
                nn::Tensor* dx, const nn::Context& ctx) override {
    std::fill_n(grads_, params_, static_cast<float>(dy.n));
    if (dx != nullptr) {
      dx->resize(dy.n, in_);
      std::fill(dx->data.begin(), dx->data.end(), 0.0f);
    }
    if (ctx.training) pacer_->end();
  }
  double forward_flops(nn::Shape /*in*/) const override { return 0; }

 private:
  std::shared_ptr<Pacer> pacer_;
  std::size_t params_;
};

}  // namespace

Workload make_workload(const replay::Spec& spec, int rank, std::uint64_t seed) {
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  Workload w;
  data::Dataset& train = w.samples.train;
  train.n = static_cast<std::size_t>(spec.settings.samples_per_epoch);
  train.rows = train.cols = 1;
  train.classes = 1;
  train.images.assign(train.n, 0.0f);
  train.labels.assign(train.n, 0);
  data::Dataset& test = w.samples.test;
  test.rows = test.cols = 1;
  test.classes = 1;
  auto pacer = std::make_shared<Pacer>(StepCost(spec, rank), spec.cpu_share);
  std::vector<std::unique_ptr<nn::Layer>> layers;
  layers.push_back(std::make_unique<Work>(pacer, static_cast<std::size_t>(spec.params)));
  w.model = std::make_unique<nn::Model>("synthetic", nn::Shape{1, 1, 1}, std::move(layers), seed);
  w.pacer = std::move(pacer);
  return w;
}

Pace pace_of(const Pacer& pacer) {
  return pacer.pace();
}

}  // namespace dbs::emulate
