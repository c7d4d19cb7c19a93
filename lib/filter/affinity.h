// The input similarities of t-SNE: each point's k = 3·perplexity nearest neighbours, a Gaussian
// kernel per point whose width is found by binary search so that the conditional distribution
// has the given perplexity, then symmetrised into one sparse joint distribution P.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dbs::filter {

// The k nearest other points of each of n points (row-major (n, d)) by blocked brute force on
// the GEMM identity |a-b|² = |a|² + |b|² - 2a·b in float, TBB-parallel over query blocks; the
// chosen distances are then recomputed in double (so only candidates within float rounding of
// the k-th distance can be swapped). idx and dist2 are (n, k), each row ascending in distance,
// ties broken by the lower index.
struct Neighbours {
  std::size_t k = 0;
  std::vector<std::int32_t> idx;
  std::vector<double> dist2;
};
Neighbours nearest_neighbours(const float* x, std::size_t n, std::size_t d, std::size_t k);

// Symmetric sparse joint probabilities in CSR form: row i holds the j != i with P_ij > 0,
// columns ascending; P_ij = P_ji and the values sum to 1 over all rows.
struct SparseP {
  std::size_t n = 0;
  std::vector<std::int64_t> row;  // n + 1 offsets into col/val
  std::vector<std::int32_t> col;
  std::vector<double> val;
};

// p_{j|i} over row i's neighbours with perplexity 2^H(P_i) = perplexity (binary search on the
// kernel precision to within 1e-5 in entropy), then P_ij = (p_{j|i} + p_{i|j}) / (2n).
SparseP joint_probabilities(const Neighbours& nb, double perplexity);

// The neighbour count for a perplexity: min(n - 1, floor(3·perplexity)). Throws ConfigError
// when n < 2 or perplexity is not in (0, (n - 1) / 3].
std::size_t neighbours_for(std::size_t n, double perplexity);

// nearest_neighbours with neighbours_for(n, perplexity), then joint_probabilities.
SparseP affinities(const float* x, std::size_t n, std::size_t d, double perplexity);

}  // namespace dbs::filter
