#include "lib/train/exchange_overlap.h"

#include <algorithm>

namespace dbs::train {

Overlap::Overlap(comm::Communicator& comm, nn::Model& model, optim::Optimizer& optimizer)
    : Replicated(comm, model, optimizer), buckets_(buckets_of(model)) {}

std::vector<Overlap::Bucket> Overlap::buckets_of(const nn::Model& model) {
  constexpr std::size_t kBucketFloats = std::size_t{1} << 16;
  std::vector<Bucket> out;
  std::size_t end = model.param_count();
  for (std::size_t i = model.layer_count(); i-- > 0;) {
    const std::size_t begin = model.param_offset(i);
    if (end - begin >= kBucketFloats || (i == 0 && end > begin)) {
      out.push_back({i, begin, end});
      end = begin;
    }
  }
  return out;
}

double Overlap::compute(const float* x, const std::int32_t* labels, int count,
                        const nn::Context& ctx, std::span<float> buf) {
  if (count == 0) std::fill_n(buf.begin(), params(), 0.0f);
  std::size_t next = 0;  // the next bucket to start
  const auto start_ready = [&](std::size_t layer) {
    for (; next < buckets_.size() && buckets_[next].layer >= layer; ++next) {
      const Bucket& k = buckets_[next];
      const auto g = model_.grads().subspan(k.begin, k.end - k.begin);
      if (count > 0)
        std::copy(g.begin(), g.end(), buf.begin() + static_cast<std::ptrdiff_t>(k.begin));
      comm_.start_allreduce_sum(buf.subspan(k.begin, k.end - k.begin));
    }
    comm_.progress();
  };
  double loss = 0.0;
  if (count > 0) loss = model_.loss_and_grads(x, labels, count, ctx, nullptr, start_ready);
  start_ready(0);  // all of them when this rank computed nothing
  return loss;
}

void Overlap::reduce(std::span<float> buf) {
  comm_.start_allreduce_sum(buf.subspan(params()));
  comm_.finish();
}

}  // namespace dbs::train
