// per_rank: one line per rank, or the spread of many ranks as bands and the median.
#include <algorithm>

#include "lib/chart/chart.h"
#include "lib/common/stats.h"

namespace dbs::chart {
namespace {

Series over(const std::vector<double>& x, std::string label, std::string color, bool step) {
  Series s;
  s.label = std::move(label);
  s.color = std::move(color);
  s.x = x;
  s.step = step;
  return s;
}

}  // namespace

std::vector<Series> per_rank(const std::vector<double>& x,
                             const std::vector<std::vector<double>>& rows, bool step) {
  std::size_t world = 0;
  for (const auto& row : rows) world = std::max(world, row.size());
  const auto at = [](const std::vector<double>& row, std::size_t i) {
    return i < row.size() ? row[i] : 0.0;
  };
  std::vector<Series> out;
  if (world <= kLinesUpTo) {
    for (std::size_t i = 0; i < world; ++i) {
      out.push_back(over(x, "rank " + std::to_string(i), color(i), step));
      out.back().dash = dash_pattern(i);
      for (const auto& row : rows) out.back().y.push_back(at(row, i));
    }
    return out;
  }
  Series wide = over(x, "min-max", "#1f77b4", step);
  Series mid = over(x, "10th-90th percentile", "#1f77b4", step);
  Series median = over(x, "median", "#0b3d66", step);
  wide.band = mid.band = true;
  wide.opacity = 0.15;
  mid.opacity = 0.35;
  std::vector<double> sorted(world);
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < world; ++i) sorted[i] = at(row, i);
    std::sort(sorted.begin(), sorted.end());
    wide.y.push_back(sorted.front());
    wide.high.push_back(sorted.back());
    mid.y.push_back(stats::quantile(sorted, 0.1));
    mid.high.push_back(stats::quantile(sorted, 0.9));
    median.y.push_back(stats::median(sorted));
  }
  return {std::move(wide), std::move(mid), std::move(median)};
}

}  // namespace dbs::chart
