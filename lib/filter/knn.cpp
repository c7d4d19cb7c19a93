// Exact k-nearest neighbours by blocked brute force (see affinity.h). Work: n²·d multiply-adds
// in float GEMM plus one comparison per pair against the row's current k-th best.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <Eigen/Dense>
#include <algorithm>
#include <queue>

#include "lib/common/error.h"
#include "lib/filter/affinity.h"

namespace dbs::filter {
namespace {

using Rows = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
constexpr Eigen::Index kQueryBlock = 128;   // query rows per task
constexpr Eigen::Index kPointBlock = 2048;  // candidate rows per GEMM

using Candidate = std::pair<float, std::int32_t>;  // approximate d², index; max-heap on both

}  // namespace

Neighbours nearest_neighbours(const float* x, std::size_t n, std::size_t d, std::size_t k) {
  if (k == 0 || k >= n) throw ConfigError("nearest_neighbours: k must be in [1, n - 1]");
  const Eigen::Index N = static_cast<Eigen::Index>(n), D = static_cast<Eigen::Index>(d);
  const Eigen::Map<const Rows> X(x, N, D);
  const Eigen::VectorXf norm = X.rowwise().squaredNorm();
  Neighbours out;
  out.k = k;
  out.idx.resize(n * k);
  out.dist2.resize(n * k);
  const Eigen::Index blocks = (N + kQueryBlock - 1) / kQueryBlock;
  tbb::parallel_for(tbb::blocked_range<Eigen::Index>(0, blocks, 1), [&](const auto& r) {
    Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> g;
    for (Eigen::Index b = r.begin(); b != r.end(); ++b) {
      const Eigen::Index q0 = b * kQueryBlock, qn = std::min(kQueryBlock, N - q0);
      std::vector<std::priority_queue<Candidate>> best(static_cast<std::size_t>(qn));
      for (Eigen::Index c0 = 0; c0 < N; c0 += kPointBlock) {
        const Eigen::Index cn = std::min(kPointBlock, N - c0);
        g.noalias() = X.middleRows(q0, qn) * X.middleRows(c0, cn).transpose();
        for (Eigen::Index qi = 0; qi < qn; ++qi) {
          auto& heap = best[static_cast<std::size_t>(qi)];
          const float nq = norm(q0 + qi);
          const float* grow = g.data() + qi * cn;
          for (Eigen::Index ci = 0; ci < cn; ++ci) {
            const Eigen::Index j = c0 + ci;
            if (j == q0 + qi) continue;
            const Candidate cand{nq + norm(j) - 2.0f * grow[ci], static_cast<std::int32_t>(j)};
            if (heap.size() < k) {
              heap.push(cand);
            } else if (cand < heap.top()) {
              heap.pop();
              heap.push(cand);
            }
          }
        }
      }
      for (Eigen::Index qi = 0; qi < qn; ++qi) {
        const std::size_t i = static_cast<std::size_t>(q0 + qi);
        std::vector<std::pair<double, std::int32_t>> row;
        row.reserve(k);
        for (auto& heap = best[static_cast<std::size_t>(qi)]; !heap.empty(); heap.pop()) {
          const std::int32_t j = heap.top().second;
          double s = 0;
          for (std::size_t t = 0; t < d; ++t) {
            const double diff = static_cast<double>(x[i * d + t]) -
                                static_cast<double>(x[static_cast<std::size_t>(j) * d + t]);
            s += diff * diff;
          }
          row.emplace_back(s, j);
        }
        std::sort(row.begin(), row.end());
        for (std::size_t t = 0; t < k; ++t) {
          out.dist2[i * k + t] = row[t].first;
          out.idx[i * k + t] = row[t].second;
        }
      }
    }
  });
  return out;
}

}  // namespace dbs::filter
