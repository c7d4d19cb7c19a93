// Optimizers over one flat parameter buffer and one flat gradient buffer.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace dbs::optim {

struct OptimizerConfig {
  double momentum = 0.9;      // SGD momentum (0 = plain SGD)
  double beta1 = 0.9;         // Adam first-moment decay
  double beta2 = 0.999;       // Adam second-moment decay
  double eps = 1e-8;          // Adam / RMSprop denominator guard
  double rho = 0.99;          // RMSprop squared-gradient decay
  double weight_decay = 0.0;  // L2 penalty added to the gradient
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual std::string name() const = 0;
  // One update. The gradient used is grads[i] * grad_scale (the trainer passes 1 / global
  // sample count, since gradients are sums). params and grads have the size given at creation.
  virtual void step(std::span<float> params, std::span<const float> grads, double lr,
                    double grad_scale) = 0;
  // The same step applied to parameters [begin, end) only (their moments included), for an
  // update sharded across ranks: the rank that owns a range gets bit-identical values to a full
  // step, since every rule is elementwise. Counts as one step (the step count advances), so every
  // rank calls it once per step, with an empty range if it owns none.
  virtual void step_range(std::span<float> params, std::span<const float> grads, double lr,
                          double grad_scale, std::size_t begin, std::size_t end) = 0;
  // The per-parameter state (moment vectors, param count floats each), for gathering the
  // slices of a sharded update into the whole state.
  virtual std::vector<std::span<float>> state_vectors() = 0;
  // Optimizer state (moments, step count) for checkpoints; load() throws InputError when the
  // stream does not hold the state of this optimizer with this parameter count.
  virtual void save(std::ostream& out) const = 0;
  virtual void load(std::istream& in) = 0;
};

// name: "sgd", "adam" or "rmsprop"; throws ConfigError for anything else.
std::unique_ptr<Optimizer> make_optimizer(const std::string& name, std::size_t param_count,
                                          const OptimizerConfig& config = {});

}  // namespace dbs::optim
