// render, escape, color, the tick arithmetic and the SVG pieces of svg.h.
#include <algorithm>
#include <cmath>
#include <limits>

#include "lib/chart/chart.h"
#include "lib/chart/svg.h"
#include "lib/common/format.h"

namespace dbs::chart {
namespace {

constexpr double kLeft = 70, kRight = 20, kTop = 34, kBottom = 44;  // margins around the plot, px
constexpr double kLegendRow = 18;                                   // px per legend row

struct Scale {
  double lo, hi, px_lo, px_hi;
  double operator()(double v) const { return px_lo + (v - lo) / (hi - lo) * (px_hi - px_lo); }
};

std::string line(double x1, double y1, double x2, double y2, const std::string& attrs) {
  return "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) + "\" y2=\"" +
         num(y2) + "\" " + attrs + "/>";
}

// The outline of y over a series' x in pixels (step series as horizontal runs).
std::vector<std::pair<double, double>> outline(const Series& s, const std::vector<double>& y,
                                               const Scale& sx, const Scale& sy) {
  std::vector<std::pair<double, double>> p;
  for (std::size_t k = 0; k < y.size() && k < s.x.size(); ++k) {
    p.emplace_back(sx(s.x[k]), sy(y[k]));
    if (s.step && k + 1 < s.x.size()) p.emplace_back(sx(s.x[k + 1]), sy(y[k]));
  }
  return p;
}

std::string points(const std::vector<std::pair<double, double>>& p) {
  std::string out;
  for (const auto& [x, y] : p) {
    if (!out.empty()) out += ' ';
    out += num(x) + ',' + num(y);
  }
  return out;
}

std::string dash(const Series& s) {
  return s.dash.empty() ? "" : " stroke-dasharray=\"" + escape(s.dash) + "\"";
}

// Lines are drawn from 3.2 px (the first) down to 1.6 px (the last), so a line hidden under a
// later one with the same values still shows at its edges.
std::string draw(const Series& s, double width, const Scale& sx, const Scale& sy) {
  if (s.band) {
    auto p = outline(s, s.y, sx, sy);
    const auto top = outline(s, s.high, sx, sy);
    p.insert(p.end(), top.rbegin(), top.rend());
    return "<polygon points=\"" + points(p) + "\" fill=\"" + escape(s.color) +
           "\" fill-opacity=\"" + format("%.2f", s.opacity) + "\" stroke=\"none\"/>\n";
  }
  std::string o = "<polyline points=\"" + points(outline(s, s.y, sx, sy)) +
                  "\" fill=\"none\" stroke=\"" + escape(s.color) + "\" stroke-width=\"" +
                  format("%.2f", width) + "\"" + dash(s) + "/>\n";
  for (std::size_t k = 0; s.markers && k < s.y.size() && k < s.x.size(); ++k)
    o += "<circle cx=\"" + num(sx(s.x[k])) + "\" cy=\"" + num(sy(s.y[k])) + "\" r=\"2.2\" fill=\"" +
         escape(s.color) + "\"/>";
  return o;
}

// The legend below the plot, wrapped into rows; adds the rows' height to `height`.
std::string legend(const Chart& c, double& height) {
  std::string o;
  double x = kLeft, y = c.height + 12;
  for (const Series& s : c.series) {
    if (s.label.empty()) continue;
    const double w = 28 + 6.5 * static_cast<double>(s.label.size());
    if (x > kLeft && x + w > c.width) x = kLeft, y += kLegendRow;
    if (s.band)
      o += "<rect x=\"" + num(x) + "\" y=\"" + num(y - 8) + "\" width=\"16\" height=\"9\" fill=\"" +
           escape(s.color) + "\" fill-opacity=\"" + format("%.2f", s.opacity) + "\"/>";
    else
      o += line(x, y - 4, x + 16, y - 4,
                "stroke=\"" + escape(s.color) + "\" stroke-width=\"2\"" + dash(s));
    o += text(x + 20, y, "", s.label) + "\n";
    x += w;
  }
  if (!o.empty()) height = y + 10;
  return o;
}

}  // namespace

std::string num(double x) {
  return format("%.1f", x);
}

std::string tick(double x) {
  return format("%.6g", std::fabs(x) < 1e-12 ? 0.0 : x);
}

std::string text(double x, double y, const std::string& attrs, std::string_view content) {
  return "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\"" + (attrs.empty() ? "" : " ") + attrs +
         ">" + escape(content) + "</text>";
}

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' ? '?' : c;
    }
  }
  return out;
}

std::string color(std::size_t k) {
  static const char* const kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                         "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"};
  return kPalette[k % std::size(kPalette)];
}

std::string dash_pattern(std::size_t k) {
  static const char* const kPatterns[] = {"", "7,4", "2,3", "9,3,2,3"};
  return kPatterns[k % std::size(kPatterns)];
}

double nice_step(double span, int count) {
  const double raw = span / std::max(count, 1);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (const double m : {1.0, 2.0, 5.0})
    if (m * mag >= raw * (1 - 1e-9)) return m * mag;
  return 10 * mag;
}

std::vector<double> nice_ticks(double lo, double hi, double step) {
  const double first = std::floor(lo / step + 1e-9), last = std::ceil(hi / step - 1e-9);
  std::vector<double> t;
  for (double k = first; k <= last; ++k) t.push_back(k * step);
  return t;
}

namespace {

// The chart with every x replaced by its log10 (x_log): plotted linearly, ticked at whole powers.
Chart log_x(Chart c) {
  for (Series& s : c.series)
    for (double& x : s.x) x = std::log10(x);
  c.x_whole = true;
  return c;
}

}  // namespace

std::string render(const Chart& chart) {
  const Chart c = chart.x_log ? log_x(chart) : chart;
  constexpr double inf = std::numeric_limits<double>::infinity();
  double x0 = inf, x1 = -inf, y0 = inf, y1 = -inf;
  for (const Series& s : c.series) {
    for (const double x : s.x) x0 = std::min(x0, x), x1 = std::max(x1, x);
    for (const double y : s.y) y0 = std::min(y0, y), y1 = std::max(y1, y);
    for (const double y : s.high) y1 = std::max(y1, y);
  }
  const bool empty = !std::isfinite(y1);
  if (!(x0 < x1)) x0 = std::isfinite(x0) ? x0 - 1 : 0, x1 = x0 + 2;
  if (c.y_from_zero || empty) y0 = std::min(0.0, empty ? 0.0 : y0);
  if (empty) y1 = 1;
  if (!(y0 < y1)) y1 = y0 + 1;
  const double right = c.width - kRight, bottom = c.height - kBottom;
  const std::vector<double> yt = nice_ticks(y0, y1, nice_step(y1 - y0, 5));
  const Scale sx{x0, x1, kLeft, right}, sy{yt.front(), yt.back(), bottom, kTop};
  const int x_count = std::max(2, static_cast<int>((right - kLeft) / 80));
  const double xstep = std::max(c.x_whole ? 1.0 : 0.0, nice_step(x1 - x0, x_count));

  std::string o = escape(c.title) + "</title>\n" +
                  text(kLeft, 18, "font-size=\"14\" font-weight=\"bold\"", c.title) + "\n";
  for (const double y : yt)
    o += line(kLeft, sy(y), right, sy(y), "stroke=\"#e4e4e4\"") +
         text(kLeft - 6, sy(y) + 4, "text-anchor=\"end\"", tick(y)) + "\n";
  for (const double x : nice_ticks(x0, x1, xstep)) {
    if (x < x0 - 1e-9 * xstep || x > x1 + 1e-9 * xstep) continue;
    o += line(sx(x), kTop, sx(x), bottom, "stroke=\"#f0f0f0\"") +
         text(sx(x), bottom + 16, "text-anchor=\"middle\"", tick(c.x_log ? std::pow(10.0, x) : x)) +
         "\n";
  }
  o += "<rect x=\"" + num(kLeft) + "\" y=\"" + num(kTop) + "\" width=\"" + num(right - kLeft) +
       "\" height=\"" + num(bottom - kTop) + "\" fill=\"none\" stroke=\"#999\"/>\n";
  o += text((kLeft + right) / 2, c.height - 8, "text-anchor=\"middle\"", c.x_label) + "\n";
  o += "<text transform=\"translate(16," + num((kTop + bottom) / 2) +
       ") rotate(-90)\" text-anchor=\"middle\">" + escape(c.y_label) + "</text>\n";
  if (empty)
    o += text((kLeft + right) / 2, (kTop + bottom) / 2, "text-anchor=\"middle\"", "no data yet");
  const auto lines = std::count_if(c.series.begin(), c.series.end(),
                                   [](const Series& s) { return !s.band && !s.y.empty(); });
  double k = 0;
  for (const Series& s : c.series) {
    if (s.y.empty()) continue;
    o += draw(s, lines > 1 ? 3.2 - 1.6 * k / static_cast<double>(lines - 1) : 1.6, sx, sy);
    k += s.band ? 0 : 1;
  }
  double height = c.height;
  o += legend(c, height);
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" role=\"img\" width=\"" +
         num(c.width) + "\" height=\"" + num(height) + "\" viewBox=\"0 0 " + num(c.width) + " " +
         num(height) + "\" font-family=\"sans-serif\" font-size=\"11\"><title>" + o + "</svg>\n";
}

}  // namespace dbs::chart
