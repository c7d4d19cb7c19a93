// The synthetic workload of dbs-agent --model synthetic: a cluster spec (lib/replay/synth.h)
// emulated on this machine. Every rank trains a model of one layer that stands for the work of a
// real one: its forward and backward together take the rank's step cost from the spec, spent
// waiting (so that hundreds of ranks fit on a few cores) except for the spec's cpu_share of it,
// spent computing; its gradient is a real buffer of the spec's `params` floats, exchanged as
// any model's. The training loop, exchange, planner, trace and checkpoint are the agent's own:
// the time they measure for a step is what the policy sees, as for the CNN. Disturbances are not
// applied here: the spec's go to the agent's Disturber (Config::disturbances), which stretches a
// step's compute as it does a real model's.
//
// A step of b samples on rank i in epoch e costs (alpha_i + b / v_i(e)) * f seconds: v_i(e) as
// replay::costs_of draws it, f = exp(step_noise * z - step_noise^2 / 2) (mean 1), z a standard
// normal drawn from the spec's seed, the rank, the epoch and the first sample of the step's
// slice (the same step always costs the same).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "lib/data/dataset.h"
#include "lib/nn/model.h"
#include "lib/policy/cost.h"
#include "lib/replay/synth.h"

namespace dbs::emulate {

// One rank's step cost.
class StepCost {
 public:
  StepCost(const replay::Spec& spec, int rank);
  // Seconds of a step of `count` samples (> 0) in epoch `epoch` (0-based; epochs past the spec's
  // cost as its last) whose slice starts at sample `key`.
  double seconds(std::int64_t epoch, int count, std::int64_t key) const;
  // The cost outside step noise in epoch `epoch`.
  const policy::Cost& cost(std::int64_t epoch) const;

 private:
  std::vector<policy::Cost> by_epoch_;
  double step_noise_;
  std::uint64_t seed_;
  int rank_;
};

// What a rank's emulated steps asked for and took.
struct Pace {
  std::int64_t steps = 0;
  double requested_s = 0;  // the sum of the steps' costs
  double taken_s = 0;      // the sum of their wall times, forward start to backward end
  double late_s = 0;       // the sum of the wake-ups' delays past each step's deadline
  double cpu_s = 0;        // the thread CPU the steps spent (cpu_share's work included)
};

class Pacer;

struct Workload {
  data::FashionMnist samples;          // N samples of one zero pixel and label 0; no test set
  std::unique_ptr<nn::Model> model;    // "synthetic": one layer of the spec's params
  std::shared_ptr<const Pacer> pacer;  // what its steps took (pace_of)
};

// Rank `rank`'s workload of the spec (seed: the model's initialisation, as --seed). Lowers this
// thread's timer slack to 1 ns, so that a wait ends when asked.
Workload make_workload(const replay::Spec& spec, int rank, std::uint64_t seed);
Pace pace_of(const Pacer& pacer);

}  // namespace dbs::emulate
