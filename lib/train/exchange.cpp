#include "lib/train/exchange.h"

#include <algorithm>

#include "lib/train/exchange_overlap.h"
#include "lib/train/exchange_replicated.h"
#include "lib/train/exchange_sharded.h"

namespace dbs::train {

double Exchange::compute(const float* x, const std::int32_t* labels, int count,
                         const nn::Context& ctx, std::span<float> buf) {
  if (count == 0) {
    std::fill_n(buf.begin(), params(), 0.0f);
    return 0.0;
  }
  const double loss = model_.loss_and_grads(x, labels, count, ctx);
  std::copy(model_.grads().begin(), model_.grads().end(), buf.begin());
  return loss;
}

std::unique_ptr<Exchange> make_exchange(const Config& config, bool overlap,
                                        comm::Communicator& comm, nn::Model& model,
                                        optim::Optimizer& optimizer) {
  if (config.update == "sharded") return std::make_unique<Sharded>(comm, model, optimizer);
  if (overlap) return std::make_unique<Overlap>(comm, model, optimizer);
  return std::make_unique<Replicated>(comm, model, optimizer);
}

}  // namespace dbs::train
