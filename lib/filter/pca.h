// Principal component analysis: the projection of n points of d dimensions on their top k
// principal axes, used to shrink features to about 50 dimensions before t-SNE.
#pragma once

#include <cstddef>
#include <vector>

namespace dbs::filter {

// x is (n, d) row-major. Returns (n, min(k, d)) row-major: the centred points projected on the
// eigenvectors of their covariance with the largest eigenvalues, in decreasing order. Each
// axis's sign is fixed so that its largest-magnitude loading is positive (deterministic output).
std::vector<float> pca(const float* x, std::size_t n, std::size_t d, std::size_t k);

}  // namespace dbs::filter
