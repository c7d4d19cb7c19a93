// Periodic model averaging (local SGD, Settings::average_every): in an averaging epoch every rank
// steps its own model with its own optimizer on the mean gradient of its slice, and after every
// H-th step (and the epoch's last) the ranks replace their models by the mean of all of them,
// each weighted by the samples it trained since the last average. With b_i samples per step,
// the weight of rank i is b_i / B over a period at one plan, so for plain SGD and H = 1 the
// average is the synchronous update: sum_i (b_i / B) (theta - lr g_i / b_i) = theta - lr sum_i
// g_i / B, with g_i the rank's gradient sum. Unlike PyTorch's PeriodicModelAverager, which
// weights every rank equally, unequal batch sizes do not bias the model toward the slow ranks.
//
// The optimizer's state (momentum, Adam's moments) stays each rank's own by default, as under
// PyTorch's PostLocalSGDOptimizer; with `state` it is averaged with the same weights as the
// parameters (the exchange then carries 1 + its moment vectors' count times the bytes).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "lib/comm/communicator.h"
#include "lib/nn/model.h"
#include "lib/optim/optimizer.h"

namespace dbs::train {

class LocalSgd {
 public:
  // tail_max: the most floats a tail() may ask for.
  LocalSgd(comm::Communicator& comm, nn::Model& model, optim::Optimizer& optimizer, bool state,
           std::size_t tail_max);

  // One local step: the optimizer on this rank's model with the slice's gradient sums grad (P
  // floats) over `count` samples, i.e. their mean. No step for an empty slice (count 0).
  void step(std::span<const float> grad, double lr, int count);

  // The floats summed over the ranks with the next average: `floats` of them (>= 1; the same
  // count on every rank), the first of which is this rank's weight, its samples since the last
  // average. Valid until the next call.
  std::span<float> tail(std::size_t floats);
  // The average (a collective): every rank's parameters, and with state its optimizer's moment
  // vectors, become sum_r w_r x_r / sum_r w_r over the ranks r, w_r the first float of rank r's
  // tail (>= 0, their sum > 0); the tail comes back summed over the ranks.
  void average();

  // Bytes one average sends per rank's buffer: the weighted vectors and the tail.
  std::size_t bytes() const { return (vectors_ * params_ + tail_floats_) * sizeof(float); }
  bool averages_state() const { return state_; }

 private:
  std::vector<std::span<float>> targets();  // the parameters, then the moment vectors

  comm::Communicator& comm_;
  nn::Model& model_;
  optim::Optimizer& optimizer_;
  bool state_;
  std::size_t params_, vectors_;  // P, and the vectors averaged (1, or 1 + the moment vectors)
  std::vector<float> buf_;        // [ w x_0 | w x_1 | ... | tail ]
  std::size_t tail_floats_ = 0;
};

}  // namespace dbs::train
