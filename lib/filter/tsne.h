// t-SNE (van der Maaten 2014, "Accelerating t-SNE using tree-based algorithms"): sparse input
// similarities P from 3·perplexity neighbours, Student-t output similarities, attractive forces
// over P's entries and repulsive forces by Barnes-Hut, gradient descent with momentum and
// per-coordinate gains, early exaggeration of P. TBB-parallel over points.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "lib/filter/affinity.h"

namespace dbs::filter {

struct TsneOptions {
  double perplexity = 30;             // effective neighbours per point
  double theta = 0.5;                 // Barnes-Hut accuracy: 0 = exact repulsion
  int iterations = 750;               // gradient steps in total (openTSNE: 250 + 500)
  int exaggeration_iterations = 250;  // the first steps multiply P by `exaggeration`
  double exaggeration = 12;
  double learning_rate = 0;     // 0 = max(n / exaggeration / 4, 50) (the gradient has its 4)
  double momentum = 0.5;        // during exaggeration
  double final_momentum = 0.8;  // after it
  std::uint64_t seed = 1;       // initial positions: N(0, 1e-4²) per coordinate
};

struct TsneResult {
  std::vector<double> y;    // (n, 2) row-major
  double kl = 0;            // KL(P || Q) at the end (Z of the last gradient step)
  double neighbours_s = 0;  // seconds: kNN search
  double affinity_s = 0;    // seconds: perplexity calibration and symmetrisation
  double optimise_s = 0;    // seconds: gradient descent
};

// The t-SNE gradient dC/dy_i = 4 Σ_j (a·P_ij - q_ij) w_ij (y_i - y_j), with w_ij =
// 1/(1+|y_i-y_j|²), q_ij = w_ij / Z, Z = Σ_{k≠l} w_kl and a the exaggeration. y and grad are (n,
// 2); the repulsive part by Barnes-Hut with `theta` (0 = every pair). Returns Z.
double tsne_gradient(const SparseP& P, const double* y, double theta, double exaggeration,
                     double* grad);

// The same gradient over all pairs, O(n²), single-threaded: the reference for tests.
double tsne_gradient_exact(const SparseP& P, const double* y, double exaggeration, double* grad);

// Embeds n points of d dimensions (row-major) in 2-D.
TsneResult tsne(const float* x, std::size_t n, std::size_t d, const TsneOptions& options);

}  // namespace dbs::filter
