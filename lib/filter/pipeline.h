// Noise filtering of a training set from its features: PCA to ~50 dimensions, t-SNE to 2-D,
// DBSCAN per class on the embedding; a sample is removed when DBSCAN calls it noise within its
// own class. And the control that removes as many samples per class at random.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "lib/filter/tsne.h"

namespace dbs::filter {

struct FilterOptions {
  std::size_t pca_dims = 50;  // 0 = no PCA
  TsneOptions tsne;
  double eps = 0;        // DBSCAN radius in embedding units; 0 = each class's k-distance knee
  int min_samples = 10;  // DBSCAN core threshold, the point itself counted
};

struct ClassStats {
  std::int32_t label = 0;
  std::size_t samples = 0;
  double eps = 0;  // used for this class
  std::int32_t clusters = 0;
  std::size_t removed = 0;
};

struct FilterResult {
  std::vector<double> embedding;    // (n, 2)
  std::vector<bool> removed;        // per sample
  std::vector<ClassStats> classes;  // per class label 0 .. classes-1
  std::vector<std::int64_t> kept;   // ascending indices of the samples not removed
  TsneResult tsne;                  // timings and KL (its y moved into embedding)
  double pca_s = 0, dbscan_s = 0;   // seconds
};

// features is (n, d) row-major, labels in [0, classes). Throws ConfigError on bad options or
// labels out of range.
FilterResult filter_noise(const float* features, std::size_t n, std::size_t d,
                          const std::int32_t* labels, int classes, const FilterOptions& options);

// Kept indices (ascending) after removing removed_per_class[c] samples of each class c chosen
// uniformly at random from `seed`.
std::vector<std::int64_t> random_control(const std::int32_t* labels, std::size_t n,
                                         const std::vector<std::size_t>& removed_per_class,
                                         std::uint64_t seed);

}  // namespace dbs::filter
