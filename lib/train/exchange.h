// The gradient exchange and optimizer update of one training step, one implementation per mode
// (Config::update, Config::overlap), chosen once per run by make_exchange. Every rank runs the
// same one: their collectives must match.
//
// A step's buffer is [ gradient sums (P floats) | tail ]: the tail (sample count, loss sum, stop
// flag, per-rank step figures; epoch.cpp) is summed over the ranks together with the gradient.
// The step calls compute, prepare, reduce, update and, where shares_parameters(), share, in that
// order; every one but compute and prepare is a collective.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "lib/comm/communicator.h"
#include "lib/nn/model.h"
#include "lib/optim/optimizer.h"
#include "lib/policy/plan.h"
#include "lib/train/config.h"

namespace dbs::train {

class Exchange {
 public:
  Exchange(comm::Communicator& comm, nn::Model& model, optim::Optimizer& optimizer)
      : comm_(comm), model_(model), optimizer_(optimizer) {}
  virtual ~Exchange() = default;
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  // Forward and backward of this rank's slice (x is (count, input), count >= 0): leaves the
  // slice's gradient sums in buf[0, P) (zeros when count is 0) and returns its loss sum.
  virtual double compute(const float* x, const std::int32_t* labels, int count,
                         const nn::Context& ctx, std::span<float> buf);
  // Before the step's collectives, with the plan in force.
  virtual void prepare(const Plan& plan) { (void)plan; }
  // Sums buf over the ranks: all of it, or (sharded) the tail and this rank's slice of the
  // gradient.
  virtual void reduce(std::span<float> buf) = 0;
  // Applies the optimizer to the parameters with the summed gradient grad (P floats) times
  // scale (1 / the step's global sample count): to all of them, or (sharded) to this rank's
  // slice.
  virtual void update(std::span<const float> grad, double lr, double scale) = 0;
  // Whether the update leaves parts of the parameters on other ranks, which share() brings back.
  virtual bool shares_parameters() const { return false; }
  virtual void share() {}
  // Makes the whole optimizer state current on every rank (sharded: it is current only in each
  // rank's slice). A collective; before a checkpoint.
  virtual void gather_state() {}

 protected:
  std::size_t params() const { return model_.param_count(); }

  comm::Communicator& comm_;
  nn::Model& model_;
  optim::Optimizer& optimizer_;
};

// The exchange of a run: sharded (Config::update), else overlap (resolve_overlap's answer), else
// replicated.
std::unique_ptr<Exchange> make_exchange(const Config& config, bool overlap,
                                        comm::Communicator& comm, nn::Model& model,
                                        optim::Optimizer& optimizer);

// The sharded update's slices of `params` parameters: rank i's share is its share of the plan's
// batch, floor(params * (b_0 + ... + b_i) / B) minus the same up to i - 1, so a rank's part of the
// update follows its speed. Every rank computes the same counts.
std::vector<std::size_t> shard_counts(std::span<const int> batch, std::size_t params);
// The first parameter of rank's slice.
std::size_t shard_begin(std::span<const std::size_t> counts, int rank);

}  // namespace dbs::train
