// The sharded exchange: each rank updates only its slice of the parameters (shard_counts: its
// share of the plan's batch). The gradient sums are reduce-scattered in those slices, each rank
// applies the optimizer to its own, and share() allgathers the parameters: the ring allreduce's
// two halves with the update between them. Each rank's optimizer state is then current only in
// its slice, until gather_state; the slices move with the plan, so prepare gathers the state
// whenever they change.
#pragma once

#include <vector>

#include "lib/train/exchange.h"

namespace dbs::train {

class Sharded : public Exchange {
 public:
  using Exchange::Exchange;
  void prepare(const Plan& plan) override;
  void reduce(std::span<float> buf) override;
  void update(std::span<const float> grad, double lr, double scale) override;
  bool shares_parameters() const override { return true; }
  void share() override;
  void gather_state() override;

 private:
  // The slices (parameter counts per rank) of the last update while the optimizer state is
  // sharded; empty when every rank holds the whole state.
  std::vector<std::size_t> shards_;
};

}  // namespace dbs::train
