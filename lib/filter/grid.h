// A uniform grid over 2-D points: square cells of side `cell`, only the occupied ones stored,
// sorted by (column, row) and found by binary search, so memory is O(n) however far apart the
// points lie. Used by DBSCAN (cell = eps) and the k-distance search.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace dbs::filter {

class Grid {
 public:
  using Key = std::pair<std::int64_t, std::int64_t>;  // column, row

  // xy is (n, 2) row-major and must outlive the grid; cell > 0.
  Grid(const double* xy, std::size_t n, double cell);

  Key key_of(std::size_t i) const {
    return {static_cast<std::int64_t>(std::floor((xy_[2 * i] - x0_) / cell_)),
            static_cast<std::int64_t>(std::floor((xy_[2 * i + 1] - y0_) / cell_))};
  }
  // The points of cell k (empty if unoccupied), ascending by index.
  std::span<const std::int32_t> points(Key k) const;
  std::int64_t columns() const { return columns_; }  // occupied span, in cells
  std::int64_t rows() const { return rows_; }

 private:
  const double* xy_;
  double cell_, x0_ = 0, y0_ = 0;
  std::int64_t columns_ = 0, rows_ = 0;
  std::vector<Key> keys_;             // occupied cells, ascending
  std::vector<std::int64_t> starts_;  // keys_.size() + 1 offsets into order_
  std::vector<std::int32_t> order_;   // point indices grouped by cell
};

}  // namespace dbs::filter
