// t-SNE: neighbours, affinities, the Barnes-Hut gradient against the exact one and against finite
// differences of the KL divergence, and separation of well-separated Gaussian clusters.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "lib/common/error.h"
#include "lib/filter/affinity.h"
#include "lib/filter/pca.h"
#include "lib/filter/tsne.h"

using namespace dbs::filter;

namespace {

std::vector<float> random_points(std::size_t n, std::size_t d, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> x(n * d);
  for (auto& v : x) v = g(rng);
  return x;
}

std::vector<double> random_layout(std::size_t n, double scale, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> g(0.0, scale);
  std::vector<double> y(2 * n);
  for (auto& v : y) v = g(rng);
  return y;
}

double dist2(const float* x, std::size_t d, std::size_t i, std::size_t j) {
  double s = 0;
  for (std::size_t t = 0; t < d; ++t) {
    const double diff = static_cast<double>(x[i * d + t]) - static_cast<double>(x[j * d + t]);
    s += diff * diff;
  }
  return s;
}

// KL(P || Q) over all pairs, Q the Student-t similarities of y: the cost t-SNE minimises.
double kl_dense(const SparseP& P, const std::vector<double>& y) {
  const std::size_t n = P.n;
  double z = 0;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j)
      if (i != j) {
        const double dx = y[2 * i] - y[2 * j], dy = y[2 * i + 1] - y[2 * j + 1];
        z += 1.0 / (1.0 + dx * dx + dy * dy);
      }
  double kl = 0;
  for (std::size_t i = 0; i < n; ++i)
    for (auto t = P.row[i]; t < P.row[i + 1]; ++t) {
      const std::size_t j = static_cast<std::size_t>(P.col[t]);
      const double dx = y[2 * i] - y[2 * j], dy = y[2 * i + 1] - y[2 * j + 1];
      kl += P.val[t] * std::log(P.val[t] * z * (1.0 + dx * dx + dy * dy));
    }
  return kl;
}

}  // namespace

TEST_CASE("Tsne.NearestNeighbours.MatchBruteForce") {
  const std::size_t n = 300, d = 7, k = 12;
  const auto x = random_points(n, d, 3);
  const Neighbours nb = nearest_neighbours(x.data(), n, d, k);
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<std::pair<double, std::size_t>> all;
    for (std::size_t j = 0; j < n; ++j)
      if (j != i) all.emplace_back(dist2(x.data(), d, i, j), j);
    std::sort(all.begin(), all.end());
    for (std::size_t t = 0; t < k; ++t) {
      CHECK(nb.idx[i * k + t] == static_cast<std::int32_t>(all[t].second));
      CHECK(nb.dist2[i * k + t] == doctest::Approx(all[t].first).epsilon(1e-12));
    }
  }
}

TEST_CASE("Tsne.Affinities.SymmetricSumToOneAndPerplexityIsChecked") {
  const std::size_t n = 200, d = 5;
  const auto x = random_points(n, d, 4);
  const SparseP P = affinities(x.data(), n, d, 10);
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i)
    for (auto t = P.row[i]; t < P.row[i + 1]; ++t) {
      const auto j = static_cast<std::size_t>(P.col[t]);
      CHECK(j != i);
      sum += P.val[t];
      const auto b = P.col.begin() + P.row[j], e = P.col.begin() + P.row[j + 1];
      const auto it = std::lower_bound(b, e, static_cast<std::int32_t>(i));
      REQUIRE(it != e);
      CHECK(P.val[static_cast<std::size_t>(it - P.col.begin())] == doctest::Approx(P.val[t]));
    }
  CHECK(sum == doctest::Approx(1.0).epsilon(1e-9));
  CHECK_THROWS_AS(affinities(x.data(), n, d, 70), dbs::ConfigError);  // > (n - 1) / 3
  CHECK_THROWS_AS(affinities(x.data(), 1, d, 1), dbs::ConfigError);
}

TEST_CASE("Tsne.Gradient.Theta0MatchesExact") {
  for (const std::size_t n : {2U, 17U, 120U}) {
    CAPTURE(n);
    const std::size_t d = 6;
    const auto x = random_points(n, d, 5);
    const SparseP P = affinities(x.data(), n, d, std::min(5.0, (n - 1) / 3.0));
    for (const double scale : {1e-3, 1.0, 20.0}) {
      CAPTURE(scale);
      auto y = random_layout(n, scale, 6);
      if (n == 120) y[2 * 7] = y[2 * 8], y[2 * 7 + 1] = y[2 * 8 + 1];  // coincident points
      std::vector<double> bh(2 * n), exact(2 * n);
      const double z_bh = tsne_gradient(P, y.data(), 0.0, 12.0, bh.data());
      const double z_ex = tsne_gradient_exact(P, y.data(), 12.0, exact.data());
      CHECK(z_bh == doctest::Approx(z_ex).epsilon(1e-12));
      double gmax = 0;
      for (const double g : exact) gmax = std::max(gmax, std::abs(g));
      for (std::size_t c = 0; c < 2 * n; ++c) CHECK(std::abs(bh[c] - exact[c]) <= 1e-10 * gmax);
    }
  }
}

TEST_CASE("Tsne.Gradient.Theta05CloseToExact") {
  // Relative L2 error of the whole gradient on a random layout (sd 10, harder than a converged
  // embedding): measured 0.023 at theta 0.5 (theta = cell width / distance); bound 0.05, and a
  // smaller theta must be more accurate.
  const std::size_t n = 800, d = 10;
  const auto x = random_points(n, d, 7);
  const SparseP P = affinities(x.data(), n, d, 30);
  const auto y = random_layout(n, 10.0, 8);
  std::vector<double> exact(2 * n);
  tsne_gradient_exact(P, y.data(), 1.0, exact.data());
  auto error = [&](double theta) {
    std::vector<double> bh(2 * n);
    tsne_gradient(P, y.data(), theta, 1.0, bh.data());
    double err = 0, norm = 0;
    for (std::size_t c = 0; c < 2 * n; ++c) {
      err += (bh[c] - exact[c]) * (bh[c] - exact[c]);
      norm += exact[c] * exact[c];
    }
    return std::sqrt(err / norm);
  };
  const double e05 = error(0.5), e025 = error(0.25);
  MESSAGE("relative gradient error: theta 0.5 " << e05 << ", theta 0.25 " << e025);
  CHECK(e05 < 0.05);
  CHECK(e025 < e05);
}

TEST_CASE("Tsne.Gradient.ExactMatchesFiniteDifferencesOfKl") {
  const std::size_t n = 25, d = 4;
  const auto x = random_points(n, d, 9);
  const SparseP P = affinities(x.data(), n, d, 5);
  auto y = random_layout(n, 2.0, 10);
  std::vector<double> g(2 * n);
  tsne_gradient_exact(P, y.data(), 1.0, g.data());
  for (std::size_t c = 0; c < 2 * n; ++c) {
    const double h = 1e-6, keep = y[c];
    y[c] = keep + h;
    const double up = kl_dense(P, y);
    y[c] = keep - h;
    const double down = kl_dense(P, y);
    y[c] = keep;
    CHECK(g[c] == doctest::Approx((up - down) / (2 * h)).epsilon(1e-5).scale(1e-3));
  }
}

TEST_CASE("Tsne.Embedding.KeepsSeparatedClustersApart") {
  // 5 Gaussian clusters (sd 1) in 30-D, centres 15 apart per axis on distinct axes, 120 points
  // each; PCA to 10-D first as the filter does. Bounds: every point's 10 nearest 2-D neighbours
  // are 98% from its own cluster, and trustworthiness T(10) >= 0.9.
  const std::size_t per = 120, classes = 5, n = per * classes, d = 30, k = 10;
  auto x = random_points(n, d, 11);
  std::vector<int> label(n);
  for (std::size_t i = 0; i < n; ++i) {
    label[i] = static_cast<int>(i % classes);
    x[i * d + static_cast<std::size_t>(label[i])] += 15.0f;
  }
  const auto reduced = pca(x.data(), n, d, 10);
  TsneOptions o;
  o.perplexity = 20;
  o.iterations = 500;
  const TsneResult r = tsne(reduced.data(), n, 10, o);
  auto out_d2 = [&](std::size_t i, std::size_t j) {
    const double dx = r.y[2 * i] - r.y[2 * j], dy = r.y[2 * i + 1] - r.y[2 * j + 1];
    return dx * dx + dy * dy;
  };
  std::size_t same = 0;
  double penalty = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<std::size_t> by_in(n), by_out;
    std::iota(by_in.begin(), by_in.end(), 0);
    std::sort(by_in.begin(), by_in.end(), [&](std::size_t a, std::size_t b) {
      return dist2(x.data(), d, i, a) < dist2(x.data(), d, i, b);
    });
    std::vector<std::size_t> rank_in(n);
    for (std::size_t t = 0; t < n; ++t) rank_in[by_in[t]] = t;  // rank 0 is i itself
    by_out = by_in;
    std::partial_sort(by_out.begin(), by_out.begin() + k + 1, by_out.end(),
                      [&](std::size_t a, std::size_t b) { return out_d2(i, a) < out_d2(i, b); });
    for (std::size_t t = 0; t <= k; ++t) {
      const std::size_t j = by_out[t];
      if (j == i) continue;
      same += label[j] == label[i];
      if (rank_in[j] > k) penalty += static_cast<double>(rank_in[j] - k);
    }
  }
  const double agreement = static_cast<double>(same) / static_cast<double>(n * k);
  const double trust = 1.0 - 2.0 / (double(n) * k * (2.0 * n - 3.0 * k - 1.0)) * penalty;
  MESSAGE("kNN label agreement " << agreement << ", trustworthiness " << trust << ", KL " << r.kl);
  CHECK(agreement >= 0.98);
  CHECK(trust >= 0.9);
}
