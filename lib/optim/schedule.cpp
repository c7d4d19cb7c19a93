#include "lib/optim/schedule.h"

#include <cmath>
#include <sstream>

#include "lib/common/error.h"

namespace dbs::optim {
namespace {

// Throws ConfigError "lr schedule: <what> must be <rule>, got <value>" unless ok.
template <typename T>
void require(bool ok, const char* what, const char* rule, T value) {
  if (ok) return;
  std::ostringstream os;
  os << "lr schedule: " << what << " must be " << rule << ", got " << value;
  throw ConfigError(os.str());
}

}  // namespace

Scaling parse_scaling(const std::string& name) {
  if (name == "none" || name == "constant") return Scaling::none;
  if (name == "linear") return Scaling::linear;
  if (name == "sqrt") return Scaling::sqrt;
  throw ConfigError("unknown lr scaling '" + name + "' (valid: none, constant, linear, sqrt)");
}

void validate(const ScheduleConfig& config, int global_batch) {
  require(config.base_lr > 0.0 && std::isfinite(config.base_lr), "base_lr", "> 0", config.base_lr);
  require(config.base_batch > 0, "base_batch", "> 0", config.base_batch);
  require(global_batch > 0, "global_batch", "> 0", global_batch);
  require(config.warmup_epochs >= 0.0 && std::isfinite(config.warmup_epochs), "warmup_epochs",
          ">= 0", config.warmup_epochs);
  require(config.decay_factor > 0.0 && std::isfinite(config.decay_factor), "decay_factor", "> 0",
          config.decay_factor);
  for (const int e : config.decay_epochs)
    require(e >= 1, "decay_epochs (epochs count from 1)", ">= 1", e);
}

double learning_rate(const ScheduleConfig& config, int global_batch, double epoch_progress) {
  const double ratio = static_cast<double>(global_batch) / static_cast<double>(config.base_batch);
  double scale = 1.0;
  if (config.scaling == Scaling::linear) scale = ratio;
  if (config.scaling == Scaling::sqrt) scale = std::sqrt(ratio);
  const double target = config.base_lr * scale;

  if (epoch_progress < config.warmup_epochs)
    return config.base_lr + (target - config.base_lr) * epoch_progress / config.warmup_epochs;

  const double epoch = std::floor(epoch_progress) + 1.0;  // the epoch running, from 1
  double lr = target;
  for (const int e : config.decay_epochs)
    if (static_cast<double>(e) <= epoch) lr *= config.decay_factor;
  return lr;
}

}  // namespace dbs::optim
