// Barnes-Hut quadtree over 2-D points for t-SNE's repulsive forces. Words: a cell is a square
// (centre cx, cy, half-width h); its summary is its point count and centre of mass (mx, my). A
// cell far enough from a point (2h / distance to its centre of mass < theta) acts on it as one
// point of mass `count`; otherwise its children (or, in a leaf of at most kLeaf points, its
// points) are visited.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dbs::filter {

class QuadTree {
 public:
  // y is (n, 2) row-major; it must outlive the tree and not change while the tree is used.
  QuadTree(const double* y, std::size_t n);

  // For point i: fx, fy += Σ_j w_ij² (y_i - y_j) and z += Σ_j w_ij over j != i, with
  // w_ij = 1 / (1 + |y_i - y_j|²), cells summarised as above. theta = 0 visits every point.
  void repulsion(std::size_t i, double theta, double& fx, double& fy, double& z) const;

  // The points in tree order (points close in the plane are close in this order).
  const std::vector<std::int32_t>& order() const { return order_; }
  std::size_t cells() const { return cells_.size(); }

 private:
  // 36 bytes, so that more of the tree stays in cache; the points themselves stay double.
  struct Cell {
    float cx, cy, h;          // square: centre and half-width
    float mx, my;             // centre of mass
    std::int32_t count;       // points inside
    std::int32_t child;       // first of 4 consecutive children; -1 in a leaf
    std::int32_t begin, end;  // the cell's points: order_[begin, end)
  };
  void build(std::int32_t cell, int depth);

  const double* y_;
  std::vector<Cell> cells_;
  std::vector<std::int32_t> order_;
};

}  // namespace dbs::filter
