#include "lib/optim/optimizer.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <istream>
#include <iterator>
#include <ostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "lib/common/error.h"

namespace dbs::optim {
namespace {

// State record, native byte order (checkpoints are read back on the same kind of machine):
//   magic "DBSOPT1\0" | u32 name length | name bytes | u64 param count | i64 step |
//   the optimizer's moment vectors in a fixed order, param count floats each.
constexpr char kMagic[8] = {'D', 'B', 'S', 'O', 'P', 'T', '1', '\0'};
constexpr std::uint32_t kMaxNameLength = 64;

// Runs body(begin, end) over [0, n). Every update is elementwise, so the result does not depend
// on how the range is split or on the thread count; small buffers stay on the calling thread.
// The update bodies are always_inline lambdas, so each is compiled twice: into the baseline
// caller and into fast_avx2::run, built for AVX2 + FMA (the instruction set, and so the
// rounding, of lib/nn's AVX2 kernels). The AVX2 copy runs when the CPU has AVX2 and FMA.
#if defined(__x86_64__)
namespace fast_avx2 {
template <typename Body>
__attribute__((target("avx2,fma"))) void run(const Body& body, std::size_t begin, std::size_t end) {
  body(begin, end);
}
}  // namespace fast_avx2

bool cpu_has_avx2_fma() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#endif

template <typename Body>
void run_best(const Body& body, std::size_t begin, std::size_t end) {
#if defined(__x86_64__)
  static const bool avx2 = cpu_has_avx2_fma();
  if (avx2) return fast_avx2::run(body, begin, end);
#endif
  body(begin, end);
}

template <typename Body>
void for_ranges(std::size_t first, std::size_t last, const Body& body) {
  constexpr std::size_t kGrain = std::size_t{1} << 15;
  if (last - first <= kGrain) {
    run_best(body, first, last);
    return;
  }
  tbb::parallel_for(
      tbb::blocked_range<std::size_t>(first, last, kGrain),
      [&](const tbb::blocked_range<std::size_t>& r) { run_best(body, r.begin(), r.end()); },
      tbb::static_partitioner());
}

void write_bytes(std::ostream& out, const void* data, std::size_t size) {
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
}

void read_bytes(std::istream& in, void* data, std::size_t size, const char* what) {
  in.read(static_cast<char*>(data), static_cast<std::streamsize>(size));
  if (!in || static_cast<std::size_t>(in.gcount()) != size)
    throw InputError(std::string("optimizer state: truncated while reading ") + what);
}

// Throws ConfigError "optimizer: <what> must be <rule>, got <value>" unless ok.
void require(bool ok, const char* what, const char* rule, double value) {
  if (ok) return;
  std::ostringstream os;
  os << "optimizer: " << what << " must be " << rule << ", got " << value;
  throw ConfigError(os.str());
}

// What an update rule sees of one step.
struct Update {
  const OptimizerConfig& config;
  std::int64_t t;                            // the step count, from 1
  double lr;                                 // learning rate of this step
  std::vector<std::vector<float>>& moments;  // the rule's vectors, param count floats each
  std::span<float> params;
  std::span<const float> grads;
  double grad_scale;
  std::size_t begin, end;  // the parameters to update

  // Runs step(i, g) for every parameter i in [begin, end), g = grads[i] * grad_scale + weight_decay
  // * params[i] (the gradient every rule uses). step must be an always_inline lambda, so that it is
  // compiled into both copies of for_ranges' body.
  template <typename Step>
  void each(const Step& step) const {
    const auto scale = static_cast<float>(grad_scale);
    const auto wd = static_cast<float>(config.weight_decay);
    const std::span<float> p = params;
    const std::span<const float> gr = grads;
    for_ranges(
        begin, end, [&](std::size_t lo, std::size_t hi) __attribute__((always_inline)) {
          for (std::size_t i = lo; i < hi; ++i) step(i, gr[i] * scale + wd * p[i]);
        });
  }
};

// v = mu * v + g; p -= lr * v (moments[0] is v, untouched when mu = 0).
void sgd(const Update& u) {
  const auto lr_f = static_cast<float>(u.lr);
  const auto mu = static_cast<float>(u.config.momentum);
  float* v = u.moments[0].data();
  float* params = u.params.data();
  u.each([&](std::size_t i, float g) __attribute__((always_inline)) {
    if (mu == 0.0f) {
      params[i] -= lr_f * g;
    } else {
      v[i] = mu * v[i] + g;
      params[i] -= lr_f * v[i];
    }
  });
}

// m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
// p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
void adam(const Update& u) {
  const double t = static_cast<double>(u.t);
  const double correction1 = 1.0 - std::pow(u.config.beta1, t);
  const double correction2 = 1.0 - std::pow(u.config.beta2, t);
  const auto step_size = static_cast<float>(u.lr / correction1);
  const auto inv_sqrt_c2 = static_cast<float>(1.0 / std::sqrt(correction2));
  const auto b1 = static_cast<float>(u.config.beta1);
  const auto b2 = static_cast<float>(u.config.beta2);
  const auto eps = static_cast<float>(u.config.eps);
  float* m = u.moments[0].data();
  float* v = u.moments[1].data();
  float* params = u.params.data();
  u.each([&](std::size_t i, float g) __attribute__((always_inline)) {
    m[i] = b1 * m[i] + (1.0f - b1) * g;
    v[i] = b2 * v[i] + (1.0f - b2) * g * g;
    params[i] -= step_size * m[i] / (std::sqrt(v[i]) * inv_sqrt_c2 + eps);
  });
}

// s = rho s + (1-rho) g^2; p -= lr * g / (sqrt(s) + eps).
void rmsprop(const Update& u) {
  const auto lr_f = static_cast<float>(u.lr);
  const auto rho = static_cast<float>(u.config.rho);
  const auto eps = static_cast<float>(u.config.eps);
  float* s = u.moments[0].data();
  float* params = u.params.data();
  u.each([&](std::size_t i, float g) __attribute__((always_inline)) {
    s[i] = rho * s[i] + (1.0f - rho) * g * g;
    params[i] -= lr_f * g / (std::sqrt(s[i]) + eps);
  });
}

struct Rule {
  const char* name;
  std::size_t moment_count;  // vectors the rule keeps
  void (*update)(const Update&);
};
constexpr Rule kRules[] = {{"sgd", 1, sgd}, {"adam", 2, adam}, {"rmsprop", 1, rmsprop}};

// Any rule's optimizer: size checks, the step count, moment vectors and their record.
class RuleOptimizer final : public Optimizer {
 public:
  RuleOptimizer(const Rule& rule, std::size_t param_count, const OptimizerConfig& config)
      : rule_(rule),
        config_(config),
        param_count_(param_count),
        moments_(rule.moment_count, std::vector<float>(param_count, 0.0f)) {}

  std::string name() const override { return rule_.name; }

  void step(std::span<float> params, std::span<const float> grads, double lr,
            double grad_scale) override {
    step_range(params, grads, lr, grad_scale, 0, param_count_);
  }

  void step_range(std::span<float> params, std::span<const float> grads, double lr,
                  double grad_scale, std::size_t begin, std::size_t end) override {
    DBS_CHECK_EQ(params.size(), param_count_);
    DBS_CHECK_EQ(grads.size(), param_count_);
    DBS_CHECK(begin <= end && end <= param_count_);
    ++step_;
    rule_.update({config_, step_, lr, moments_, params, grads, grad_scale, begin, end});
  }

  std::vector<std::span<float>> state_vectors() override {
    return {moments_.begin(), moments_.end()};
  }

  void save(std::ostream& out) const override {
    const std::string own = name();
    const auto name_length = static_cast<std::uint32_t>(own.size());
    const auto count = static_cast<std::uint64_t>(param_count_);
    write_bytes(out, kMagic, sizeof kMagic);
    write_bytes(out, &name_length, sizeof name_length);
    write_bytes(out, own.data(), own.size());
    write_bytes(out, &count, sizeof count);
    write_bytes(out, &step_, sizeof step_);
    for (const auto& m : moments_) write_bytes(out, m.data(), m.size() * sizeof(float));
  }

  // Reads the whole record before changing anything, so a rejected record leaves state as is.
  void load(std::istream& in) override {
    char magic[sizeof kMagic];
    read_bytes(in, magic, sizeof magic, "magic");
    if (!std::equal(magic, magic + sizeof magic, kMagic))
      throw InputError("optimizer state: bad magic (not a DBSOPT1 record)");

    std::uint32_t name_length = 0;
    read_bytes(in, &name_length, sizeof name_length, "optimizer name");
    if (name_length > kMaxNameLength)
      throw InputError("optimizer state: optimizer name length " + std::to_string(name_length) +
                       " is implausible");
    std::string stored(name_length, '\0');
    read_bytes(in, stored.data(), stored.size(), "optimizer name");
    if (stored != name())
      throw InputError("optimizer state is for optimizer '" + stored + "', expected '" + name() +
                       "'");

    std::uint64_t count = 0;
    read_bytes(in, &count, sizeof count, "parameter count");
    if (count != param_count_)
      throw InputError("optimizer state has " + std::to_string(count) + " parameters, expected " +
                       std::to_string(param_count_));

    std::int64_t stored_step = 0;
    read_bytes(in, &stored_step, sizeof stored_step, "step count");
    if (stored_step < 0)
      throw InputError("optimizer state: negative step count " + std::to_string(stored_step));

    std::vector<std::vector<float>> stored_moments(moments_.size(),
                                                   std::vector<float>(param_count_));
    for (auto& m : stored_moments)
      read_bytes(in, m.data(), m.size() * sizeof(float), "moment vectors");

    step_ = stored_step;
    moments_ = std::move(stored_moments);
  }

 private:
  Rule rule_;
  OptimizerConfig config_;
  std::size_t param_count_;
  std::int64_t step_ = 0;                    // updates done, including the current one
  std::vector<std::vector<float>> moments_;  // each param_count_ floats
};

// Throws ConfigError for hyperparameters no optimizer can use.
void check_config(const OptimizerConfig& c) {
  const auto in_unit = [](double x) { return x >= 0.0 && x < 1.0; };
  require(in_unit(c.momentum), "momentum", "in [0, 1)", c.momentum);
  require(in_unit(c.beta1), "beta1", "in [0, 1)", c.beta1);
  require(in_unit(c.beta2), "beta2", "in [0, 1)", c.beta2);
  require(in_unit(c.rho), "rho", "in [0, 1)", c.rho);
  require(c.eps > 0.0, "eps", "> 0", c.eps);
  require(c.weight_decay >= 0.0, "weight_decay", ">= 0", c.weight_decay);
}

}  // namespace

std::unique_ptr<Optimizer> make_optimizer(const std::string& name, std::size_t param_count,
                                          const OptimizerConfig& config) {
  const auto* rule = std::find_if(std::begin(kRules), std::end(kRules),
                                  [&](const Rule& r) { return name == r.name; });
  if (rule == std::end(kRules))
    throw ConfigError("unknown optimizer '" + name + "' (valid: sgd, adam, rmsprop)");
  check_config(config);
  return std::make_unique<RuleOptimizer>(*rule, param_count, config);
}

}  // namespace dbs::optim
