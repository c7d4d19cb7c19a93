// svg_chart and escape_xml (views.h).
#include <algorithm>
#include <cstdio>

#include "scheduler/serve/views.h"

namespace dbs::scheduler {
namespace {

constexpr const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                                   "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939",
                                   "#8c6d31", "#843c39", "#7b4173", "#3182bd"};

std::string num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", x);
  return buf;
}

std::string label(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, x >= 100 || x == 0 ? "%.0f" : "%.3g", x);
  return buf;
}

}  // namespace

std::string escape_xml(const std::string& text) {
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
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t')
          out += '?';
        else
          out += c;
    }
  }
  return out;
}

// Layout: a W x H box, the plot inside margins L (left), R, T, B; x = epochs, y = 0..top.
std::string svg_chart(const std::string& title, const std::string& unit,
                      const std::vector<std::int64_t>& epochs,
                      const std::vector<std::vector<double>>& series,
                      const std::vector<std::string>& names) {
  constexpr double W = 520, H = 220, L = 56, R = 110, T = 24, B = 30;
  const double pw = W - L - R, ph = H - T - B;
  std::string s =
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"520\" "
      "height=\"220\" viewBox=\"0 0 520 220\" role=\"img\">";
  s += "<title>" + escape_xml(title) + "</title>";
  s += "<text x=\"" + num(L) + "\" y=\"16\" class=\"t\">" + escape_xml(title) + " (" +
       escape_xml(unit) + ")</text>";
  s += "<rect x=\"" + num(L) + "\" y=\"" + num(T) + "\" width=\"" + num(pw) + "\" height=\"" +
       num(ph) + "\" fill=\"none\" stroke=\"#ccc\"/>";
  if (epochs.empty()) {
    s += "<text x=\"" + num(L + pw / 2) + "\" y=\"" + num(T + ph / 2) +
         "\" text-anchor=\"middle\">no epochs yet</text></svg>";
    return s;
  }
  double top = 0;
  for (const auto& line : series)
    for (const double v : line) top = std::max(top, v);
  top = top > 0 ? top * 1.1 : 1;
  const double first = static_cast<double>(epochs.front()),
               last = static_cast<double>(epochs.back());
  const auto x_of = [&](double e) {
    return last > first ? L + pw * (e - first) / (last - first) : L + pw / 2;
  };
  const auto y_of = [&](double v) { return T + ph * (1 - v / top); };
  for (const double f : {0.0, 0.5, 1.0}) {  // y grid and labels
    s += "<line x1=\"" + num(L) + "\" x2=\"" + num(L + pw) + "\" y1=\"" + num(y_of(top * f / 1.1)) +
         "\" y2=\"" + num(y_of(top * f / 1.1)) + "\" stroke=\"#eee\"/>";
    s += "<text x=\"" + num(L - 4) + "\" y=\"" + num(y_of(top * f / 1.1) + 4) +
         "\" text-anchor=\"end\">" + label(top * f / 1.1) + "</text>";
  }
  s += "<text x=\"" + num(L) + "\" y=\"" + num(H - 10) + "\">epoch " +
       std::to_string(epochs.front()) + "</text>";
  if (epochs.size() > 1)
    s += "<text x=\"" + num(L + pw) + "\" y=\"" + num(H - 10) + "\" text-anchor=\"end\">" +
         std::to_string(epochs.back()) + "</text>";
  for (std::size_t k = 0; k < series.size(); ++k) {
    const char* color = kColors[k % std::size(kColors)];
    std::string points;
    for (std::size_t i = 0; i < epochs.size() && i < series[k].size(); ++i) {
      if (!points.empty()) points += ' ';
      points += num(x_of(static_cast<double>(epochs[i]))) + "," + num(y_of(series[k][i]));
    }
    s += "<polyline class=\"series\" fill=\"none\" stroke-width=\"2\" stroke=\"" +
         std::string(color) + "\" points=\"" + points + "\"/>";
    if (epochs.size() == 1)
      s += "<circle cx=\"" + num(x_of(first)) + "\" cy=\"" + num(y_of(series[k][0])) +
           "\" r=\"3\" fill=\"" + color + "\"/>";
    const double ly = T + 12 + 14 * static_cast<double>(k);
    s += "<text x=\"" + num(L + pw + 8) + "\" y=\"" + num(ly) + "\" fill=\"" + color + "\">" +
         escape_xml(k < names.size() ? names[k] : "") + "</text>";
  }
  s += "</svg>";
  return s;
}

}  // namespace dbs::scheduler
