// Scatter plots for many points (tens of thousands) as inline SVG: each series is one <path> of
// zero-length round-capped strokes ("M x y h0" per point), so a point costs about 12 bytes.
// Same conventions as chart.h: self-contained, well-formed XML, round ticks, a legend.
#pragma once

#include <string>
#include <vector>

namespace dbs::chart {

struct ScatterSeries {
  std::string label;      // in the legend; empty = not listed
  std::string color;      // CSS colour
  std::vector<double> x, y;
  double size = 2.5;      // dot diameter, px
  double opacity = 0.8;
  bool cross = false;     // draw "x" marks instead of dots (for points to stand out)
};

struct Scatter {
  std::string title;
  std::string x_label, y_label;
  std::vector<ScatterSeries> series;  // drawn in order: later series on top
  double width = 420;   // px, the plot with its axes; the legend adds rows below
  double height = 420;
  bool axes = true;     // ticks and axis titles (t-SNE axes have no units: may be turned off)
};

// The scatter as one <svg> element with a <title>. Both axes span all series' points.
std::string render(const Scatter& scatter);

}  // namespace dbs::chart
