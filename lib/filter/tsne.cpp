#include "lib/filter/tsne.h"

#include <tbb/blocked_range.h>
#include <tbb/combinable.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "lib/common/error.h"
#include "lib/common/hash.h"
#include "lib/filter/quadtree.h"

namespace dbs::filter {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Attractive part a·Σ_j P_ij w_ij (y_i - y_j) of row i into f.
void attraction(const SparseP& P, const double* y, std::size_t i, double a, double* f) {
  double fx = 0, fy = 0;
  for (std::int64_t t = P.row[i]; t < P.row[i + 1]; ++t) {
    const auto j = static_cast<std::size_t>(P.col[static_cast<std::size_t>(t)]);
    const double dx = y[2 * i] - y[2 * j], dy = y[2 * i + 1] - y[2 * j + 1];
    const double pw = P.val[static_cast<std::size_t>(t)] / (1.0 + dx * dx + dy * dy);
    fx += pw * dx;
    fy += pw * dy;
  }
  f[0] = a * fx;
  f[1] = a * fy;
}

// Standard normal from two counter-based uniforms (Box-Muller).
double normal(std::uint64_t seed, std::uint64_t k) {
  const double u1 = (static_cast<double>(mix64(seed ^ splitmix64(2 * k)) >> 11) + 0.5) * 0x1p-53;
  const double u2 = static_cast<double>(mix64(seed ^ splitmix64(2 * k + 1)) >> 11) * 0x1p-53;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

// KL(P || Q) = Σ P_ij ln(P_ij / q_ij) over P's entries, q_ij = w_ij / z.
double kl_divergence(const SparseP& P, const double* y, double z) {
  double kl = 0;
  for (std::size_t i = 0; i < P.n; ++i)
    for (std::int64_t t = P.row[i]; t < P.row[i + 1]; ++t) {
      const auto j = static_cast<std::size_t>(P.col[static_cast<std::size_t>(t)]);
      const double dx = y[2 * i] - y[2 * j], dy = y[2 * i + 1] - y[2 * j + 1];
      const double q = 1.0 / (1.0 + dx * dx + dy * dy) / z;
      const double p = P.val[static_cast<std::size_t>(t)];
      if (p > 0) kl += p * std::log(p / std::max(q, 1e-300));
    }
  return kl;
}

}  // namespace

double tsne_gradient(const SparseP& P, const double* y, double theta, double exaggeration,
                     double* grad) {
  const std::size_t n = P.n;
  const QuadTree tree(y, n);
  const auto& order = tree.order();
  std::vector<double> rep(2 * n);
  tbb::combinable<double> zsum([] { return 0.0; });
  // In tree order, so that one task's points share the cells they visit.
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n, 64), [&](const auto& r) {
    double z = 0;
    for (std::size_t t = r.begin(); t != r.end(); ++t) {
      const auto i = static_cast<std::size_t>(order[t]);
      double fx = 0, fy = 0;
      tree.repulsion(i, theta, fx, fy, z);
      rep[2 * i] = fx;
      rep[2 * i + 1] = fy;
      attraction(P, y, i, exaggeration, grad + 2 * i);
    }
    zsum.local() += z;
  });
  const double z = zsum.combine(std::plus<double>());
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, 2 * n, 4096), [&](const auto& r) {
    for (std::size_t k = r.begin(); k != r.end(); ++k) grad[k] = 4.0 * (grad[k] - rep[k] / z);
  });
  return z;
}

double tsne_gradient_exact(const SparseP& P, const double* y, double exaggeration, double* grad) {
  const std::size_t n = P.n;
  std::vector<double> rep(2 * n, 0.0);
  double z = 0;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j) continue;
      const double dx = y[2 * i] - y[2 * j], dy = y[2 * i + 1] - y[2 * j + 1];
      const double w = 1.0 / (1.0 + dx * dx + dy * dy);
      z += w;
      rep[2 * i] += w * w * dx;
      rep[2 * i + 1] += w * w * dy;
    }
  for (std::size_t i = 0; i < n; ++i) {
    attraction(P, y, i, exaggeration, grad + 2 * i);
    grad[2 * i] = 4.0 * (grad[2 * i] - rep[2 * i] / z);
    grad[2 * i + 1] = 4.0 * (grad[2 * i + 1] - rep[2 * i + 1] / z);
  }
  return z;
}

TsneResult tsne(const float* x, std::size_t n, std::size_t d, const TsneOptions& o) {
  if (o.iterations < 0 || o.exaggeration_iterations < 0 || !(o.theta >= 0))
    throw ConfigError("t-SNE: iterations and theta must not be negative");
  TsneResult res;
  auto t0 = std::chrono::steady_clock::now();
  const Neighbours nb = nearest_neighbours(x, n, d, neighbours_for(n, o.perplexity));
  res.neighbours_s = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  const SparseP P = joint_probabilities(nb, o.perplexity);
  res.affinity_s = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();

  const double eta = o.learning_rate > 0
                         ? o.learning_rate
                         : std::max(static_cast<double>(n) / o.exaggeration / 4.0, 50.0);
  std::vector<double>& y = res.y;
  y.resize(2 * n);
  for (std::size_t k2 = 0; k2 < 2 * n; ++k2) y[k2] = 1e-4 * normal(o.seed, k2);
  std::vector<double> grad(2 * n), update(2 * n, 0.0), gains(2 * n, 1.0);
  double z = 1;
  for (int it = 0; it < o.iterations; ++it) {
    const bool early = it < o.exaggeration_iterations;
    z = tsne_gradient(P, y.data(), o.theta, early ? o.exaggeration : 1.0, grad.data());
    const double momentum = early ? o.momentum : o.final_momentum;
    double mx = 0, my = 0;
    for (std::size_t c = 0; c < 2 * n; ++c) {
      // Gains grow while the gradient keeps pointing against the last update's direction.
      gains[c] = (grad[c] > 0) != (update[c] > 0) ? gains[c] + 0.2 : std::max(gains[c] * 0.8, 0.01);
      update[c] = momentum * update[c] - eta * gains[c] * grad[c];
      y[c] += update[c];
      (c % 2 == 0 ? mx : my) += y[c];
    }
    mx /= static_cast<double>(n);
    my /= static_cast<double>(n);
    for (std::size_t i = 0; i < n; ++i) {
      y[2 * i] -= mx;
      y[2 * i + 1] -= my;
    }
  }
  res.optimise_s = seconds_since(t0);
  res.kl = kl_divergence(P, y.data(), z);
  return res;
}

}  // namespace dbs::filter
