// The replicated exchange: one blocking allreduce of the whole buffer after the backward pass,
// then every rank applies the same update to every parameter.
#pragma once

#include "lib/train/exchange.h"

namespace dbs::train {

class Replicated : public Exchange {
 public:
  using Exchange::Exchange;
  void reduce(std::span<float> buf) override { comm_.allreduce_sum(buf); }
  void update(std::span<const float> grad, double lr, double scale) override {
    optimizer_.step(model_.params(), grad, lr, scale);
  }
};

}  // namespace dbs::train
