#include "lib/common/stats.h"

#include <algorithm>
#include <cstddef>

namespace dbs::stats {

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  q = std::clamp(q, 0.0, 1.0);
  const auto k = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  const auto at = v.begin() + static_cast<std::ptrdiff_t>(k);
  std::nth_element(v.begin(), at, v.end());
  return *at;
}

}  // namespace dbs::stats
