// render(const Scatter&): the scatter plots of chart.h.
#include <algorithm>
#include <cmath>

#include "lib/chart/chart.h"
#include "lib/chart/svg.h"
#include "lib/common/format.h"

namespace dbs::chart {
namespace {

constexpr double kLeft = 56, kRight = 12, kTop = 28, kBottom = 40;  // margins, px
constexpr double kLegendRow = 18;

struct Range {
  double lo = HUGE_VAL, hi = -HUGE_VAL;
  void add(double v) {
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  void settle() {
    if (lo > hi) lo = 0, hi = 1;
    if (hi - lo < 1e-12) lo -= 0.5, hi += 0.5;
  }
};

}  // namespace

std::string render(const Scatter& s) {
  Range rx, ry;
  for (const auto& se : s.series)
    for (std::size_t k = 0; k < se.x.size() && k < se.y.size(); ++k)
      rx.add(se.x[k]), ry.add(se.y[k]);
  rx.settle();
  ry.settle();
  const double sx_step = nice_step(rx.hi - rx.lo, 5), sy_step = nice_step(ry.hi - ry.lo, 5);
  const auto xt = nice_ticks(rx.lo, rx.hi, sx_step), yt = nice_ticks(ry.lo, ry.hi, sy_step);
  const double x0 = xt.front(), x1 = xt.back(), y0 = yt.front(), y1 = yt.back();
  const double left = s.axes ? kLeft : 8, bottom = s.axes ? kBottom : 8;
  const double pw = s.width - left - kRight, ph = s.height - kTop - bottom;
  auto px = [&](double v) { return left + (v - x0) / (x1 - x0) * pw; };
  auto py = [&](double v) { return kTop + ph - (v - y0) / (y1 - y0) * ph; };

  std::string body;
  body += "<text x=\"" + num(left) + "\" y=\"18\" font-weight=\"bold\">" + escape(s.title) +
          "</text>\n";
  body += "<rect x=\"" + num(left) + "\" y=\"" + num(kTop) + "\" width=\"" + num(pw) +
          "\" height=\"" + num(ph) + "\" fill=\"none\" stroke=\"#999\"/>\n";
  if (s.axes) {
    for (const double v : xt)
      body += text(px(v), kTop + ph + 16, "text-anchor=\"middle\"", tick(v));
    for (const double v : yt) body += text(left - 6, py(v) + 4, "text-anchor=\"end\"", tick(v));
    body += '\n' + text(left + pw / 2, kTop + ph + 34, "text-anchor=\"middle\"", s.x_label) + "\n";
    body += "<text transform=\"translate(14," + num(kTop + ph / 2) +
            ") rotate(-90)\" text-anchor=\"middle\">" + escape(s.y_label) + "</text>\n";
  }
  for (const auto& se : s.series) {
    std::string d;
    d.reserve(se.x.size() * 14);
    const double a = se.size / 2;
    for (std::size_t k = 0; k < se.x.size() && k < se.y.size(); ++k) {
      if (!std::isfinite(se.x[k]) || !std::isfinite(se.y[k])) continue;
      const double cx = px(se.x[k]), cy = py(se.y[k]);
      // One format call per point (string concatenation here trips g++ 12's -Wrestrict).
      if (se.cross)
        d += format("M%.1f %.1fl%.1f %.1fm0 %.1fl%.1f %.1f", cx - a, cy - a, 2 * a, 2 * a, -2 * a,
                    -2 * a, 2 * a);
      else
        d += format("M%.1f %.1fh0", cx, cy);
    }
    body += "<path d=\"" + d + "\" fill=\"none\" stroke=\"" + escape(se.color) +
            "\" stroke-opacity=\"" + format("%.2f", se.opacity) + "\" stroke-width=\"" +
            format("%.2f", se.cross ? 1.2 : se.size) + "\" stroke-linecap=\"round\"/>\n";
  }
  double lx = left, ly = s.height + 12, height = s.height;
  for (const auto& se : s.series) {
    if (se.label.empty()) continue;
    const double w = 26 + 7.0 * static_cast<double>(se.label.size());
    if (lx + w > s.width && lx > left) lx = left, ly += kLegendRow;
    body += "<circle cx=\"" + num(lx + 6) + "\" cy=\"" + num(ly - 4) + "\" r=\"4\" fill=\"" +
            escape(se.color) + "\"/>" + text(lx + 14, ly, "", se.label) + "\n";
    lx += w;
    height = ly + 8;
  }
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(s.width) + "\" height=\"" +
         num(height) + "\" viewBox=\"0 0 " + num(s.width) + " " + num(height) +
         "\" font-family=\"sans-serif\" font-size=\"11\">\n<title>" + escape(s.title) +
         "</title>\n" + body + "</svg>\n";
}

}  // namespace dbs::chart
