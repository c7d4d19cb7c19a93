// Learning-rate schedule: scaling from a base batch to the run's global batch B, gradual warmup,
// step decay. lr(t) for a fractional epoch t = epoch + step / steps_per_epoch (epochs count from
// 0):
//   target = base_lr * scale, scale = 1 | B / base_batch | sqrt(B / base_batch)
//   warmup (t < warmup_epochs): base_lr + (target - base_lr) * t / warmup_epochs
//   after: target * decay_factor ^ (number of decay_epochs <= floor(t) + 1)
// decay_epochs count from 1, like every epoch a user sees: {3} decays from the start of the
// third epoch, t = 2.0.
#pragma once

#include <string>
#include <vector>

namespace dbs::optim {

enum class Scaling { none, linear, sqrt };

// "none" (also "constant"), "linear", "sqrt"; throws ConfigError otherwise.
Scaling parse_scaling(const std::string& name);

struct ScheduleConfig {
  double base_lr = 0.001;           // learning rate at base_batch
  Scaling scaling = Scaling::none;  // how lr follows the global batch
  int base_batch = 128;             // batch size base_lr was tuned for
  double warmup_epochs = 0;         // gradual warmup length (0 = none)
  std::vector<int> decay_epochs;  // epochs (from 1) at whose start lr is multiplied by decay_factor
  double decay_factor = 0.1;
};

// Throws ConfigError for non-positive lr or batch sizes, negative warmup, decay factor <= 0.
void validate(const ScheduleConfig& config, int global_batch);

// The learning rate at epoch_progress of a run of global batch global_batch (> 0).
double learning_rate(const ScheduleConfig& config, int global_batch, double epoch_progress);

}  // namespace dbs::optim
