#include "lib/filter/affinity.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>

#include "lib/common/error.h"

namespace dbs::filter {
namespace {

// Row i's conditional p_{j|i} ∝ exp(-beta (d²_j - d²_0)) with entropy H = ln(perplexity) (nats).
// Binary search on beta (precision of the Gaussian, 1/(2σ²)); shifting by the nearest d²_0
// leaves the normalised row unchanged and keeps exp from underflowing.
void calibrate_row(const double* d2, std::size_t k, double perplexity, double* p) {
  const double target = std::log(perplexity);
  double beta = 1.0, lo = 0.0, hi = HUGE_VAL;
  const double d0 = d2[0];
  for (int iter = 0; iter < 200; ++iter) {
    double sum = 0, dot = 0;
    for (std::size_t t = 0; t < k; ++t) {
      p[t] = std::exp(-beta * (d2[t] - d0));
      sum += p[t];
      dot += (d2[t] - d0) * p[t];
    }
    const double h = std::log(sum) + beta * dot / sum;
    for (std::size_t t = 0; t < k; ++t) p[t] /= sum;
    if (std::abs(h - target) < 1e-5) return;
    if (h > target) {  // too flat: narrow the kernel
      lo = beta;
      beta = std::isinf(hi) ? beta * 2 : (beta + hi) / 2;
    } else {
      hi = beta;
      beta = (beta + lo) / 2;
    }
  }
}

}  // namespace

SparseP joint_probabilities(const Neighbours& nb, double perplexity) {
  const std::size_t k = nb.k, n = k == 0 ? 0 : nb.idx.size() / k;
  std::vector<double> cond(n * k);
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n, 256), [&](const auto& r) {
    for (std::size_t i = r.begin(); i != r.end(); ++i)
      calibrate_row(&nb.dist2[i * k], k, perplexity, &cond[i * k]);
  });
  // Row i of P gets p_{j|i} from its own neighbours and p_{i|j} from every j that has i as a
  // neighbour: count both, fill, then sort each row and merge the duplicate (i, j) entries.
  SparseP P;
  P.n = n;
  std::vector<std::int64_t> count(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t t = 0; t < k; ++t) {
      ++count[i];
      ++count[static_cast<std::size_t>(nb.idx[i * k + t])];
    }
  std::vector<std::int64_t> start(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) start[i + 1] = start[i] + count[i];
  std::vector<std::pair<std::int32_t, double>> entries(static_cast<std::size_t>(start[n]));
  std::vector<std::int64_t> fill(start.begin(), start.end() - 1);
  const double scale = 1.0 / (2.0 * static_cast<double>(n));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t t = 0; t < k; ++t) {
      const auto j = static_cast<std::size_t>(nb.idx[i * k + t]);
      const double v = cond[i * k + t] * scale;
      entries[static_cast<std::size_t>(fill[i]++)] = {static_cast<std::int32_t>(j), v};
      entries[static_cast<std::size_t>(fill[j]++)] = {static_cast<std::int32_t>(i), v};
    }
  std::vector<std::int64_t> merged(n, 0);
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n, 256), [&](const auto& r) {
    for (std::size_t i = r.begin(); i != r.end(); ++i) {
      auto* b = entries.data() + start[i];
      auto* e = entries.data() + start[i + 1];
      std::sort(b, e, [](const auto& a, const auto& c) { return a.first < c.first; });
      auto* out = b;
      for (auto* it = b; it != e; ++it) {
        if (out != b && (out - 1)->first == it->first)
          (out - 1)->second += it->second;
        else
          *out++ = *it;
      }
      merged[i] = out - b;
    }
  });
  P.row.assign(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) P.row[i + 1] = P.row[i] + merged[i];
  P.col.resize(static_cast<std::size_t>(P.row[n]));
  P.val.resize(P.col.size());
  for (std::size_t i = 0; i < n; ++i)
    for (std::int64_t t = 0; t < merged[i]; ++t) {
      const auto& e = entries[static_cast<std::size_t>(start[i] + t)];
      P.col[static_cast<std::size_t>(P.row[i] + t)] = e.first;
      P.val[static_cast<std::size_t>(P.row[i] + t)] = e.second;
    }
  return P;
}

std::size_t neighbours_for(std::size_t n, double perplexity) {
  if (n < 2) throw ConfigError("t-SNE needs at least 2 points, got " + std::to_string(n));
  const double max_perplexity = static_cast<double>(n - 1) / 3.0;
  if (!(perplexity > 0) || perplexity > max_perplexity)
    throw ConfigError("perplexity " + std::to_string(perplexity) + " is not in (0, " +
                      std::to_string(max_perplexity) + "] for " + std::to_string(n) + " points");
  return std::clamp<std::size_t>(static_cast<std::size_t>(3 * perplexity), 1, n - 1);
}

SparseP affinities(const float* x, std::size_t n, std::size_t d, double perplexity) {
  return joint_probabilities(nearest_neighbours(x, n, d, neighbours_for(n, perplexity)),
                             perplexity);
}

}  // namespace dbs::filter
