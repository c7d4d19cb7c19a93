// DBSCAN on 2-D points with a grid index (cells of side eps: a point's eps-neighbours lie in its
// own and the 8 surrounding cells), and the default eps from the knee of the k-distance curve.
//
// Labels, the same for the grid version and the O(n²) reference:
//  - N(i) = { j : |p_i - p_j| <= eps }, i included; i is a core point when |N(i)| >= min_samples.
//  - Clusters are the connected components of the core points under |p_i - p_j| <= eps,
//    numbered 0, 1, ... in increasing order of their lowest point index.
//  - A non-core point with a core point in N(i) is a border point and joins the cluster of the
//    lowest-index such core point; any other point is noise, label -1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dbs::filter {

inline constexpr std::int32_t kNoise = -1;

struct DbscanResult {
  std::vector<std::int32_t> label;  // per point: cluster id or kNoise
  std::vector<bool> core;           // per point
  std::int32_t clusters = 0;
};

// xy is (n, 2) row-major. Throws ConfigError for eps <= 0 or min_samples < 1.
DbscanResult dbscan(const double* xy, std::size_t n, double eps, int min_samples);

// The O(n²) reference with the same labels: brute-force neighbourhoods, breadth-first search.
DbscanResult dbscan_reference(const double* xy, std::size_t n, double eps, int min_samples);

// Per point, the distance to its k-th nearest other point (k >= 1; infinity when n <= k).
std::vector<double> kth_neighbour_distance(const double* xy, std::size_t n, int k);

// The knee of a k-distance curve: the values sorted ascending, both axes scaled to [0, 1], the
// value where the curve lies farthest below the chord from its first to its last point.
double knee(std::vector<double> values);

// The default eps for min_samples: the knee of the (min_samples - 1)-distance curve (a point
// whose distance is at most that has min_samples points, itself included, within eps).
// min_samples = 1 uses k = 1.
double default_eps(const double* xy, std::size_t n, int min_samples);

}  // namespace dbs::filter
