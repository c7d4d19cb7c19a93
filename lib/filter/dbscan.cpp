#include "lib/filter/dbscan.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <queue>

#include "lib/common/error.h"
#include "lib/filter/grid.h"

namespace dbs::filter {
namespace {

void check(double eps, int min_samples) {
  if (!(eps > 0) || !std::isfinite(eps))
    throw ConfigError("DBSCAN eps must be positive and finite, got " + std::to_string(eps));
  if (min_samples < 1)
    throw ConfigError("DBSCAN min_samples must be at least 1, got " + std::to_string(min_samples));
}

double dist2(const double* xy, std::size_t i, std::size_t j) {
  const double dx = xy[2 * i] - xy[2 * j], dy = xy[2 * i + 1] - xy[2 * j + 1];
  return dx * dx + dy * dy;
}

// Calls f(j) for every j with |p_i - p_j| <= eps (i included). The cells are a hair wider than
// eps so that rounding in the cell index never puts a neighbour two cells away.
template <typename F>
void for_neighbours(const Grid& g, const double* xy, std::size_t i, double eps2, F&& f) {
  const auto [cx, cy] = g.key_of(i);
  for (std::int64_t dx = -1; dx <= 1; ++dx)
    for (std::int64_t dy = -1; dy <= 1; ++dy)
      for (const std::int32_t j : g.points({cx + dx, cy + dy}))
        if (dist2(xy, i, static_cast<std::size_t>(j)) <= eps2) f(static_cast<std::size_t>(j));
}

std::size_t find(std::vector<std::size_t>& parent, std::size_t a) {
  while (parent[a] != a) a = parent[a] = parent[parent[a]];
  return a;
}

}  // namespace

DbscanResult dbscan(const double* xy, std::size_t n, double eps, int min_samples) {
  check(eps, min_samples);
  DbscanResult r;
  r.label.assign(n, kNoise);
  r.core.assign(n, false);
  if (n == 0) return r;
  const Grid g(xy, n, eps * (1 + 1e-9));
  const double eps2 = eps * eps;
  std::vector<char> core(n, 0);
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n, 512), [&](const auto& range) {
    for (std::size_t i = range.begin(); i != range.end(); ++i) {
      int count = 0;
      for_neighbours(g, xy, i, eps2, [&](std::size_t) { ++count; });
      core[i] = count >= min_samples;
    }
  });
  // Union-find over the core points, the root of a set always its lowest index.
  std::vector<std::size_t> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  for (std::size_t i = 0; i < n; ++i) {
    if (!core[i]) continue;
    for_neighbours(g, xy, i, eps2, [&](std::size_t j) {
      if (j <= i || !core[j]) return;
      const std::size_t a = find(parent, i), b = find(parent, j);
      if (a != b) parent[std::max(a, b)] = std::min(a, b);
    });
  }
  std::vector<std::int32_t> id_of_root(n, kNoise);
  for (std::size_t i = 0; i < n; ++i) {
    r.core[i] = core[i] != 0;
    if (!core[i]) continue;
    const std::size_t root = find(parent, i);
    if (id_of_root[root] == kNoise) id_of_root[root] = r.clusters++;
    r.label[i] = id_of_root[root];
  }
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n, 512), [&](const auto& range) {
    for (std::size_t i = range.begin(); i != range.end(); ++i) {
      if (core[i]) continue;
      std::size_t best = n;
      for_neighbours(g, xy, i, eps2, [&](std::size_t j) {
        if (core[j] && j < best) best = j;
      });
      if (best < n) r.label[i] = r.label[best];
    }
  });
  return r;
}

DbscanResult dbscan_reference(const double* xy, std::size_t n, double eps, int min_samples) {
  check(eps, min_samples);
  const double eps2 = eps * eps;
  std::vector<std::vector<std::size_t>> nb(n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j)
      if (dist2(xy, i, j) <= eps2) nb[i].push_back(j);
  DbscanResult r;
  r.label.assign(n, kNoise);
  r.core.assign(n, false);
  for (std::size_t i = 0; i < n; ++i)
    r.core[i] = nb[i].size() >= static_cast<std::size_t>(min_samples);
  for (std::size_t i = 0; i < n; ++i) {
    if (!r.core[i] || r.label[i] != kNoise) continue;
    const std::int32_t id = r.clusters++;
    std::queue<std::size_t> q;
    q.push(i);
    r.label[i] = id;
    while (!q.empty()) {
      const std::size_t a = q.front();
      q.pop();
      for (const std::size_t b : nb[a])
        if (r.core[b] && r.label[b] == kNoise) {
          r.label[b] = id;
          q.push(b);
        }
    }
  }
  for (std::size_t i = 0; i < n; ++i)
    if (!r.core[i])
      for (const std::size_t j : nb[i])  // ascending: the first core neighbour is the lowest
        if (r.core[j]) {
          r.label[i] = r.label[j];
          break;
        }
  return r;
}

std::vector<double> kth_neighbour_distance(const double* xy, std::size_t n, int k) {
  if (k < 1) throw ConfigError("k-distance needs k >= 1, got " + std::to_string(k));
  const auto kk = static_cast<std::size_t>(k);
  std::vector<double> out(n, std::numeric_limits<double>::infinity());
  if (n <= kk) return out;
  double x0 = xy[0], x1 = xy[0], y0 = xy[1], y1 = xy[1];
  for (std::size_t i = 0; i < n; ++i) {
    x0 = std::min(x0, xy[2 * i]);
    x1 = std::max(x1, xy[2 * i]);
    y0 = std::min(y0, xy[2 * i + 1]);
    y1 = std::max(y1, xy[2 * i + 1]);
  }
  // Cells holding about k + 1 points each if the points were spread evenly.
  const double area = std::max((x1 - x0) * (y1 - y0), 1e-300);
  double h = std::sqrt(area * static_cast<double>(kk + 1) / static_cast<double>(n));
  if (!(h > 0) || !std::isfinite(h)) h = std::max({x1 - x0, y1 - y0, 1.0});
  const Grid g(xy, n, h);
  const std::int64_t max_ring = std::max(g.columns(), g.rows());
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n, 256), [&](const auto& range) {
    std::priority_queue<double> best;  // the k smallest d² so far; top = the k-th
    for (std::size_t i = range.begin(); i != range.end(); ++i) {
      best = {};
      const auto [cx, cy] = g.key_of(i);
      auto visit = [&](std::int64_t x, std::int64_t y) {
        for (const std::int32_t j : g.points({x, y})) {
          if (static_cast<std::size_t>(j) == i) continue;
          const double d = dist2(xy, i, static_cast<std::size_t>(j));
          if (best.size() < kk) {
            best.push(d);
          } else if (d < best.top()) {
            best.pop();
            best.push(d);
          }
        }
      };
      // Ring r holds the cells at Chebyshev distance r; every point of ring r + 1 and beyond is
      // at least r·h away, so the search stops once the k-th best is within that.
      for (std::int64_t ring = 0; ring <= max_ring; ++ring) {
        for (std::int64_t x = cx - ring; x <= cx + ring; ++x) {
          visit(x, cy - ring);
          if (ring > 0) visit(x, cy + ring);
        }
        for (std::int64_t y = cy - ring + 1; y <= cy + ring - 1; ++y) {
          visit(cx - ring, y);
          visit(cx + ring, y);
        }
        const double reach = static_cast<double>(ring) * h;
        if (best.size() == kk && best.top() <= reach * reach) break;
      }
      out[i] = std::sqrt(best.top());
    }
  });
  return out;
}

double knee(std::vector<double> v) {
  if (v.empty()) throw ConfigError("knee of an empty curve");
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  const double lo = v.front(), span = v.back() - v.front();
  if (n < 3 || !(span > 0) || !std::isfinite(span)) return v[n / 2];
  std::size_t best = 0;
  double best_gap = -1;
  for (std::size_t i = 0; i < n; ++i) {
    const double x = static_cast<double>(i) / static_cast<double>(n - 1);
    const double gap = x - (v[i] - lo) / span;  // chord y = x minus the scaled curve
    if (gap > best_gap) {
      best_gap = gap;
      best = i;
    }
  }
  return v[best];
}

double default_eps(const double* xy, std::size_t n, int min_samples) {
  if (n < 2) throw ConfigError("default eps needs at least 2 points");
  const int k = std::clamp(min_samples - 1, 1, static_cast<int>(n - 1));
  return knee(kth_neighbour_distance(xy, n, k));
}

}  // namespace dbs::filter
