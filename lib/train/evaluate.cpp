#include <algorithm>

#include "lib/nn/kernels.h"
#include "lib/train/epoch.h"

namespace dbs::train::detail {

std::pair<double, double> evaluate(comm::Communicator& comm, nn::Model& model,
                                   const data::Dataset& test) {
  constexpr int kBatch = 256;
  const int world = comm.size(), rank = comm.rank();
  const std::size_t n = test.n;
  const std::size_t begin = n * rank / world, end = n * (rank + 1) / world;
  nn::Context ctx;              // inference: no dropout
  double sums[2] = {0.0, 0.0};  // loss, correct
  for (std::size_t i = begin; i < end; i += kBatch) {
    const int m = static_cast<int>(std::min<std::size_t>(kBatch, end - i));
    const nn::Tensor& logits = model.forward(test.image(i), m, ctx);
    int correct = 0;
    sums[0] += nn::fast::softmax_xent(m, model.classes(), logits.ptr(), test.labels.data() + i,
                                      nullptr, &correct);
    sums[1] += correct;
  }
  comm.allreduce_sum(std::span<double>(sums, 2));
  const double total = static_cast<double>(std::max<std::size_t>(n, 1));
  return {sums[0] / total, sums[1] / total};
}

}  // namespace dbs::train::detail
