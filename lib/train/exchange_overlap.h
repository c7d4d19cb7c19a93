// The overlapped exchange: the replicated update, with the gradient sent in buckets of whole
// layers, each started (non-blocking) as soon as the backward pass has finished its layers, the
// last layers first, so most of the exchange runs while the first layers still compute. The
// tail follows after the compute, and reduce waits for all of them.
#pragma once

#include <vector>

#include "lib/train/exchange_replicated.h"

namespace dbs::train {

class Overlap : public Replicated {
 public:
  Overlap(comm::Communicator& comm, nn::Model& model, optim::Optimizer& optimizer);
  double compute(const float* x, const std::int32_t* labels, int count, const nn::Context& ctx,
                 std::span<float> buf) override;
  void reduce(std::span<float> buf) override;

  // Parameters [begin, end): the whole layers from `layer` on up to the next bucket; started
  // when the backward of `layer` is done.
  struct Bucket {
    std::size_t layer, begin, end;
  };
  // Last layers first, each bucket at least 2^16 parameters (256 KiB; the first layers'
  // remainder may be fewer). The same on every rank: it depends on the model only. cnn: 4
  // buckets, the dense layers' 101,110 and 257,000, conv3's 295,168, conv1 + conv2's 37,312.
  static std::vector<Bucket> buckets_of(const nn::Model& model);

 private:
  std::vector<Bucket> buckets_;
};

}  // namespace dbs::train
