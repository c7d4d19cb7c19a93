#include "lib/train/local_sgd.h"

#include <algorithm>

#include "lib/common/error.h"

namespace dbs::train {

LocalSgd::LocalSgd(comm::Communicator& comm, nn::Model& model, optim::Optimizer& optimizer,
                   bool state, std::size_t tail_max)
    : comm_(comm),
      model_(model),
      optimizer_(optimizer),
      state_(state),
      params_(model.param_count()),
      vectors_(1 + (state ? optimizer.state_vectors().size() : 0)),
      buf_(vectors_ * params_ + std::max<std::size_t>(tail_max, 1)) {}

void LocalSgd::step(std::span<const float> grad, double lr, int count) {
  if (count <= 0) return;
  optimizer_.step(model_.params(), grad.first(params_), lr, 1.0 / count);
}

std::span<float> LocalSgd::tail(std::size_t floats) {
  DBS_CHECK(floats >= 1 && vectors_ * params_ + floats <= buf_.size());
  tail_floats_ = floats;
  return std::span<float>(buf_).subspan(vectors_ * params_, floats);
}

std::vector<std::span<float>> LocalSgd::targets() {
  std::vector<std::span<float>> out{model_.params()};
  if (state_)
    for (const std::span<float> v : optimizer_.state_vectors()) out.push_back(v);
  DBS_CHECK_EQ(out.size(), vectors_);
  return out;
}

void LocalSgd::average() {
  DBS_CHECK(tail_floats_ >= 1);
  const std::size_t P = params_;
  const float w = buf_[vectors_ * P];
  DBS_CHECK(w >= 0.0f);
  const std::vector<std::span<float>> x = targets();
  for (std::size_t k = 0; k < x.size(); ++k)
    std::transform(x[k].begin(), x[k].end(), buf_.begin() + static_cast<std::ptrdiff_t>(k * P),
                   [w](float v) { return w * v; });
  comm_.allreduce_sum(std::span<float>(buf_).first(vectors_ * P + tail_floats_));
  const float sum = buf_[vectors_ * P];
  DBS_CHECK(sum > 0.0f);
  for (std::size_t k = 0; k < x.size(); ++k)
    std::transform(buf_.begin() + static_cast<std::ptrdiff_t>(k * P),
                   buf_.begin() + static_cast<std::ptrdiff_t>((k + 1) * P), x[k].begin(),
                   [sum](float v) { return v / sum; });
}

}  // namespace dbs::train
