// The SVG pieces both renderers write (render.cpp, scatter.cpp); internal to lib/chart.
#pragma once

#include <string>
#include <string_view>

namespace dbs::chart {

// A coordinate or length in px, one decimal.
std::string num(double x);

// A tick label: short, no trailing zeros, no "-0".
std::string tick(double x);

// <text x=".." y="..">content</text>, content escaped; attrs ("text-anchor=..") may be empty.
std::string text(double x, double y, const std::string& attrs, std::string_view content);

}  // namespace dbs::chart
