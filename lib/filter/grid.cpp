#include "lib/filter/grid.h"

#include <algorithm>

#include "lib/common/error.h"

namespace dbs::filter {

Grid::Grid(const double* xy, std::size_t n, double cell) : xy_(xy), cell_(cell), order_(n) {
  if (!(cell > 0) || !std::isfinite(cell))
    throw ConfigError("grid cell size must be positive and finite, got " + std::to_string(cell));
  double x1 = 0, y1 = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(xy[2 * i]) || !std::isfinite(xy[2 * i + 1]))
      throw InputError("point " + std::to_string(i) + " has a coordinate that is not finite");
    if (i == 0 || xy[2 * i] < x0_) x0_ = xy[2 * i];
    if (i == 0 || xy[2 * i + 1] < y0_) y0_ = xy[2 * i + 1];
    if (i == 0 || xy[2 * i] > x1) x1 = xy[2 * i];
    if (i == 0 || xy[2 * i + 1] > y1) y1 = xy[2 * i + 1];
  }
  columns_ = static_cast<std::int64_t>((x1 - x0_) / cell) + 1;
  rows_ = static_cast<std::int64_t>((y1 - y0_) / cell) + 1;
  std::vector<std::pair<Key, std::int32_t>> keyed(n);
  for (std::size_t i = 0; i < n; ++i) keyed[i] = {key_of(i), static_cast<std::int32_t>(i)};
  std::sort(keyed.begin(), keyed.end());
  for (std::size_t t = 0; t < n; ++t) {
    if (t == 0 || keyed[t].first != keyed[t - 1].first) {
      keys_.push_back(keyed[t].first);
      starts_.push_back(static_cast<std::int64_t>(t));
    }
    order_[t] = keyed[t].second;
  }
  starts_.push_back(static_cast<std::int64_t>(n));
}

std::span<const std::int32_t> Grid::points(Key k) const {
  const auto it = std::lower_bound(keys_.begin(), keys_.end(), k);
  if (it == keys_.end() || *it != k) return {};
  const auto c = static_cast<std::size_t>(it - keys_.begin());
  return {order_.data() + starts_[c], static_cast<std::size_t>(starts_[c + 1] - starts_[c])};
}

}  // namespace dbs::filter
