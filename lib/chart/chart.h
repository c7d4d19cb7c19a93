// Inline-SVG charts for the daemon's status page and the replay report: lines, step lines and
// shaded bands on linear (or log10 x) axes with round ticks and axis titles; and scatter plots
// for the filter report. The output is well-formed XML (the status page is served as XHTML) and
// self-contained: no scripts, nothing fetched.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace dbs::chart {

// One thing drawn. A step series holds y[k] over [x[k], x[k+1]), so x has one more entry than y;
// other series join the points (x[k], y[k]). A band shades between y (low edge) and high.
struct Series {
  std::string label;  // in the legend; empty = not listed
  std::string color;  // CSS colour
  std::vector<double> x, y;
  std::vector<double> high;  // band only: upper edge, same size as y
  bool step = false;
  bool band = false;
  std::string dash;       // SVG stroke-dasharray ("5,4"); empty = solid
  bool markers = false;   // small circles at the points
  double opacity = 0.25;  // band fill
};

struct Chart {
  std::string title;
  std::string x_label;  // axis titles, units included ("samples/s")
  std::string y_label;
  std::vector<Series> series;  // drawn in order (bands first reads best)
  bool y_from_zero = true;
  bool x_whole = true;  // x ticks on whole numbers only (epochs)
  bool x_log = false;   // x on a log10 axis with ticks at powers of ten (every x > 0)
  double width = 760;   // px, the plot with its axes; the legend adds rows below
  double height = 300;
};

// The chart as one <svg> element with a <title>.
std::string render(const Chart& chart);

// Scatter plots for many points (tens of thousands): each series is one <path> of zero-length
// round-capped strokes ("M x y h0" per point), so a point costs about 12 bytes.
struct ScatterSeries {
  std::string label;  // in the legend; empty = not listed
  std::string color;  // CSS colour
  std::vector<double> x, y;
  double size = 2.5;  // dot diameter, px
  double opacity = 0.8;
  bool cross = false;  // draw "x" marks instead of dots (for points to stand out)
};

struct Scatter {
  std::string title;
  std::string x_label, y_label;
  std::vector<ScatterSeries> series;  // drawn in order: later series on top
  double width = 420;                 // px, the plot with its axes; the legend adds rows below
  double height = 420;
  bool axes = true;  // ticks and axis titles (t-SNE axes have no units: may be turned off)
};

// The scatter as one <svg> element with a <title>. Both axes span all series' points.
std::string render(const Scatter& scatter);

// Text safe in HTML/XML content and attributes: & < > " ' escaped, control characters other
// than tab and newline (not allowed in XML 1.0) replaced by '?'.
std::string escape(std::string_view text);

// Colour k of a palette of 10 that stay apart on white.
std::string color(std::size_t k);

// Dash pattern k (SVG stroke-dasharray) of 4: solid, dashed, dotted, dash-dot. Lines of equal
// values drawn with different patterns show each other through their gaps.
std::string dash_pattern(std::size_t k);

// A round tick spacing (1, 2 or 5 x 10^k) giving about `count` intervals over span > 0.
double nice_step(double span, int count);

// Ticks `step` apart from the multiple of step at or below lo to the one at or above hi.
std::vector<double> nice_ticks(double lo, double hi, double step);

// More ranks than this are drawn as their spread, not one line each.
inline constexpr std::size_t kLinesUpTo = 8;

// Per-rank values over x: rows[k][i] is rank i's value at x[k] (for step series over
// [x[k], x[k+1]), so x has rows.size() + 1 entries). Up to kLinesUpTo ranks: one line per rank
// labelled "rank i", in color(i) and dash_pattern(i); more: min-max and 10th-90th percentile
// bands and the median line.
std::vector<Series> per_rank(const std::vector<double>& x,
                             const std::vector<std::vector<double>>& rows, bool step);

}  // namespace dbs::chart
