#include "lib/filter/quadtree.h"

#include <algorithm>
#include <cmath>

namespace dbs::filter {
namespace {

constexpr int kMaxDepth = 40;  // deeper cells are leaves (coincident points end here)
constexpr int kLeaf = 4;       // a cell of at most this many points is a leaf

}  // namespace

QuadTree::QuadTree(const double* y, std::size_t n) : y_(y), order_(n) {
  for (std::size_t i = 0; i < n; ++i) order_[i] = static_cast<std::int32_t>(i);
  double lo_x = HUGE_VAL, lo_y = HUGE_VAL, hi_x = -HUGE_VAL, hi_y = -HUGE_VAL;
  for (std::size_t i = 0; i < n; ++i) {
    lo_x = std::min(lo_x, y[2 * i]);
    hi_x = std::max(hi_x, y[2 * i]);
    lo_y = std::min(lo_y, y[2 * i + 1]);
    hi_y = std::max(hi_y, y[2 * i + 1]);
  }
  const double h = n == 0 ? 1.0 : std::max(hi_x - lo_x, hi_y - lo_y) / 2 * (1 + 1e-6) + 1e-12;
  cells_.reserve(2 * n + 1);
  cells_.push_back({static_cast<float>((lo_x + hi_x) / 2), static_cast<float>((lo_y + hi_y) / 2),
                    static_cast<float>(h), 0, 0, 0, -1, 0, static_cast<std::int32_t>(n)});
  build(0, 0);
}

void QuadTree::build(std::int32_t c, int depth) {
  Cell cell = cells_[static_cast<std::size_t>(c)];
  double mx = 0, my = 0;
  for (std::int32_t t = cell.begin; t < cell.end; ++t) {
    mx += y_[2 * order_[static_cast<std::size_t>(t)]];
    my += y_[2 * order_[static_cast<std::size_t>(t)] + 1];
  }
  cell.count = cell.end - cell.begin;
  if (cell.count > 0) {
    cell.mx = static_cast<float>(mx / cell.count);
    cell.my = static_cast<float>(my / cell.count);
  }
  if (cell.count <= kLeaf || depth >= kMaxDepth) {
    cells_[static_cast<std::size_t>(c)] = cell;
    return;
  }
  // Quadrants in order: (left, bottom), (right, bottom), (left, top), (right, top).
  auto* b = order_.data() + cell.begin;
  auto* e = order_.data() + cell.end;
  const double cx = cell.cx, cy = cell.cy;
  auto* mid = std::partition(b, e, [&](std::int32_t i) { return y_[2 * i + 1] < cy; });
  auto* q1 = std::partition(b, mid, [&](std::int32_t i) { return y_[2 * i] < cx; });
  auto* q3 = std::partition(mid, e, [&](std::int32_t i) { return y_[2 * i] < cx; });
  const std::int32_t bounds[5] = {cell.begin, static_cast<std::int32_t>(q1 - order_.data()),
                                  static_cast<std::int32_t>(mid - order_.data()),
                                  static_cast<std::int32_t>(q3 - order_.data()), cell.end};
  cell.child = static_cast<std::int32_t>(cells_.size());
  cells_[static_cast<std::size_t>(c)] = cell;
  const float q = cell.h / 2;
  for (int k = 0; k < 4; ++k)
    cells_.push_back({cell.cx + ((k & 1) ? q : -q), cell.cy + ((k & 2) ? q : -q), q, 0, 0, 0, -1,
                      bounds[k], bounds[k + 1]});
  for (int k = 0; k < 4; ++k) build(cell.child + k, depth + 1);
}

void QuadTree::repulsion(std::size_t i, double theta, double& fx, double& fy, double& z) const {
  const double xi = y_[2 * i], yi = y_[2 * i + 1];
  const double theta2 = theta * theta;
  std::int32_t stack[4 * kMaxDepth + 8];
  int top = 0;
  stack[top++] = 0;
  while (top > 0) {
    const Cell& c = cells_[static_cast<std::size_t>(stack[--top])];
    if (c.count == 0) continue;
    const double dx = xi - double(c.mx), dy = yi - double(c.my), d2 = dx * dx + dy * dy;
    const double width2 = 4.0 * double(c.h) * double(c.h);
    if (c.count > 1 && width2 < theta2 * d2) {
      const double w = 1.0 / (1.0 + d2);
      z += c.count * w;
      fx += c.count * w * w * dx;
      fy += c.count * w * w * dy;
    } else if (c.child < 0) {
      for (std::int32_t t = c.begin; t < c.end; ++t) {
        const auto j = static_cast<std::size_t>(order_[static_cast<std::size_t>(t)]);
        if (j == i) continue;
        const double ex = xi - y_[2 * j], ey = yi - y_[2 * j + 1];
        const double w = 1.0 / (1.0 + ex * ex + ey * ey);
        z += w;
        fx += w * w * ex;
        fy += w * w * ey;
      }
    } else {
      for (int k = 3; k >= 0; --k) stack[top++] = c.child + k;
    }
  }
}

}  // namespace dbs::filter
