#include "lib/replay/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace dbs::replay::svg {
namespace {

constexpr double kWidth = 760, kHeight = 300;
constexpr double kLeft = 70, kRight = 20, kTop = 34, kBottom = 44;

std::string num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", x);
  return buf;
}

// A tick label: short, no trailing zeros.
std::string tick(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", std::fabs(x) < 1e-12 ? 0.0 : x);
  return buf;
}

// Round tick spacing giving about `count` ticks over span: 1, 2 or 5 x 10^k.
double nice_step(double span, int count) {
  const double raw = span / count;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (const double m : {1.0, 2.0, 5.0}) {
    if (m * mag >= raw) return m * mag;
  }
  return 10 * mag;
}

struct Scale {
  double lo, hi, px_lo, px_hi;
  double operator()(double v) const { return px_lo + (v - lo) / (hi - lo) * (px_hi - px_lo); }
};

// The outline of a series as "x,y" points in pixels (step series as horizontal runs).
std::vector<std::pair<double, double>> outline(const Series& s, const std::vector<double>& y,
                                               const Scale& sx, const Scale& sy) {
  std::vector<std::pair<double, double>> p;
  for (std::size_t k = 0; k < y.size(); ++k) {
    if (s.step) {
      p.emplace_back(sx(s.x[k]), sy(y[k]));
      p.emplace_back(sx(s.x[k + 1]), sy(y[k]));
    } else {
      p.emplace_back(sx(s.x[k]), sy(y[k]));
    }
  }
  return p;
}

std::string points(const std::vector<std::pair<double, double>>& p) {
  std::string out;
  for (const auto& [x, y] : p) out += num(x) + "," + num(y) + " ";
  return out;
}

}  // namespace

std::string escape(const std::string& text) {
  std::string out;
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
      default:
        out += c;
    }
  }
  return out;
}

std::string color(std::size_t k) {
  static const char* const kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                         "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"};
  return kPalette[k % 10];
}

std::string render(const Chart& c) {
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  for (const Series& s : c.series) {
    for (const double x : s.x) x0 = std::min(x0, x), x1 = std::max(x1, x);
    for (const double y : s.y) y0 = std::min(y0, y), y1 = std::max(y1, y);
    for (const double y : s.high) y1 = std::max(y1, y);
  }
  if (!(x0 < x1)) x0 = std::isfinite(x0) ? x0 - 1 : 0, x1 = x0 + 2;
  if (c.y_from_zero) y0 = std::min(0.0, std::isfinite(y0) ? y0 : 0.0);
  if (!std::isfinite(y1)) y1 = 1;
  if (!(y0 < y1)) y1 = y0 + 1;
  const double ystep = nice_step(y1 - y0, 5);
  y0 = std::floor(y0 / ystep) * ystep;
  y1 = std::ceil(y1 / ystep) * ystep;
  const Scale sx{x0, x1, kLeft, kWidth - kRight}, sy{y0, y1, kHeight - kBottom, kTop};

  std::string o = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(kWidth) +
                  "\" height=\"" + num(kHeight + 22) + "\" viewBox=\"0 0 " + num(kWidth) + " " +
                  num(kHeight + 22) + "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  o += "<text x=\"" + num(kLeft) + "\" y=\"18\" font-size=\"14\" font-weight=\"bold\">" +
       escape(c.title) + "</text>\n";
  // Grid and ticks.
  for (double y = y0; y <= y1 + ystep * 1e-9; y += ystep) {
    o += "<line x1=\"" + num(kLeft) + "\" x2=\"" + num(kWidth - kRight) + "\" y1=\"" + num(sy(y)) +
         "\" y2=\"" + num(sy(y)) + "\" stroke=\"#e4e4e4\"/>";
    o += "<text x=\"" + num(kLeft - 6) + "\" y=\"" + num(sy(y) + 4) + "\" text-anchor=\"end\">" +
         tick(y) + "</text>\n";
  }
  const double xstep = nice_step(x1 - x0, 8);
  for (double x = std::ceil(x0 / xstep) * xstep; x <= x1 + xstep * 1e-9; x += xstep) {
    o += "<line x1=\"" + num(sx(x)) + "\" x2=\"" + num(sx(x)) + "\" y1=\"" + num(kTop) +
         "\" y2=\"" + num(kHeight - kBottom) + "\" stroke=\"#f0f0f0\"/>";
    o += "<text x=\"" + num(sx(x)) + "\" y=\"" + num(kHeight - kBottom + 16) +
         "\" text-anchor=\"middle\">" + tick(x) + "</text>\n";
  }
  o += "<rect x=\"" + num(kLeft) + "\" y=\"" + num(kTop) + "\" width=\"" +
       num(kWidth - kRight - kLeft) + "\" height=\"" + num(kHeight - kBottom - kTop) +
       "\" fill=\"none\" stroke=\"#999\"/>\n";
  o += "<text x=\"" + num((kLeft + kWidth - kRight) / 2) + "\" y=\"" + num(kHeight - 8) +
       "\" text-anchor=\"middle\">" + escape(c.x_label) + "</text>\n";
  o += "<text transform=\"translate(16," + num((kTop + kHeight - kBottom) / 2) +
       ") rotate(-90)\" text-anchor=\"middle\">" + escape(c.y_label) + "</text>\n";
  // Series.
  for (const Series& s : c.series) {
    if (s.y.empty()) continue;
    if (s.band) {
      auto p = outline(s, s.y, sx, sy);
      auto top = outline(s, s.high, sx, sy);
      p.insert(p.end(), top.rbegin(), top.rend());
      o += "<polygon points=\"" + points(p) + "\" fill=\"" + s.color + "\" fill-opacity=\"" +
           num(s.opacity) + "\" stroke=\"none\"/>\n";
      continue;
    }
    o += "<polyline points=\"" + points(outline(s, s.y, sx, sy)) + "\" fill=\"none\" stroke=\"" +
         s.color + "\" stroke-width=\"1.6\"" + (s.dashed ? " stroke-dasharray=\"5,4\"" : "") +
         "/>\n";
    if (s.markers) {
      for (std::size_t k = 0; k < s.y.size(); ++k) {
        o += "<circle cx=\"" + num(sx(s.x[k])) + "\" cy=\"" + num(sy(s.y[k])) +
             "\" r=\"2.2\" fill=\"" + s.color + "\"/>";
      }
      o += "\n";
    }
  }
  // Legend below the plot.
  double lx = kLeft;
  for (const Series& s : c.series) {
    if (s.label.empty()) continue;
    const double ly = kHeight + 12;
    if (s.band) {
      o += "<rect x=\"" + num(lx) + "\" y=\"" + num(ly - 8) +
           "\" width=\"16\" height=\"9\" fill=\"" + s.color + "\" fill-opacity=\"" +
           num(s.opacity) + "\"/>";
    } else {
      o += "<line x1=\"" + num(lx) + "\" x2=\"" + num(lx + 16) + "\" y1=\"" + num(ly - 4) +
           "\" y2=\"" + num(ly - 4) + "\" stroke=\"" + s.color + "\" stroke-width=\"2\"" +
           (s.dashed ? " stroke-dasharray=\"4,3\"" : "") + "/>";
    }
    o += "<text x=\"" + num(lx + 20) + "\" y=\"" + num(ly) + "\">" + escape(s.label) + "</text>\n";
    lx += 28 + 6.5 * static_cast<double>(s.label.size());
  }
  return o + "</svg>\n";
}

}  // namespace dbs::replay::svg
