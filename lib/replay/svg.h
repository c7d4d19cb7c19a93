// Small inline-SVG line charts for the replay report: lines, step lines and shaded bands on
// linear axes with round ticks. No scripts, no external resources.
#pragma once

#include <string>
#include <vector>

namespace dbs::replay::svg {

// One thing drawn. Step series hold y[k] over [x[k], x[k+1]), so x has one more entry than y;
// other series join the points (x[k], y[k]). A band shades between y (low) and high.
struct Series {
  std::string label;  // in the legend; empty = not listed
  std::string color;  // CSS colour
  std::vector<double> x, y;
  std::vector<double> high;  // band only: upper edge, same size as y
  bool step = false;
  bool band = false;
  bool dashed = false;
  bool markers = false;   // small circles at the points
  double opacity = 0.25;  // band fill
};

struct Chart {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<Series> series;  // drawn in order (bands first reads best)
  bool y_from_zero = true;
};

// The chart as an <svg> element, 760 x 300 px plus the legend.
std::string render(const Chart& chart);

// Text safe for HTML and SVG content and attributes.
std::string escape(const std::string& text);

// A colour for series k of a palette of 10 that stays apart on white.
std::string color(std::size_t k);

}  // namespace dbs::replay::svg
