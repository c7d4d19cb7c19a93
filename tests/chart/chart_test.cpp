// lib/chart: round ticks, x labels at sensible intervals, escaping, step lines, bands beyond
// kLinesUpTo ranks, and what every chart carries (title, axis titles, legend).
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "lib/chart/chart.h"

using namespace dbs::chart;

namespace {

// The text of every <text> element, in order.
std::vector<std::string> texts(const std::string& svg) {
  std::vector<std::string> out;
  for (std::size_t at = svg.find("<text"); at != std::string::npos; at = svg.find("<text", at)) {
    const std::size_t open = svg.find('>', at) + 1, close = svg.find("</text>", open);
    out.push_back(svg.substr(open, close - open));
    at = close;
  }
  return out;
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  for (const auto& x : v)
    if (x == s) return true;
  return false;
}

// The points of the n-th <polyline> as (x, y) pixels.
std::vector<std::pair<double, double>> polyline(const std::string& svg, int n = 0) {
  std::size_t at = svg.find("<polyline");
  for (int i = 0; i < n; ++i) at = svg.find("<polyline", at + 1);
  REQUIRE(at != std::string::npos);
  const std::size_t open = svg.find("points=\"", at) + 8, close = svg.find('"', open);
  std::vector<std::pair<double, double>> p;
  std::string pts = svg.substr(open, close - open);
  for (std::size_t i = 0; i < pts.size();) {
    std::size_t end = pts.find(' ', i);
    if (end == std::string::npos) end = pts.size();
    const std::string xy = pts.substr(i, end - i);
    const std::size_t comma = xy.find(',');
    p.emplace_back(std::stod(xy.substr(0, comma)), std::stod(xy.substr(comma + 1)));
    i = end + 1;
  }
  return p;
}

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

Chart line_chart(std::vector<double> x, std::vector<double> y, bool step = false) {
  Chart c;
  c.title = "t";
  c.x_label = "epoch";
  c.y_label = "samples/s";
  Series s;
  s.label = "rank 0";
  s.color = color(0);
  s.x = std::move(x);
  s.y = std::move(y);
  s.step = step;
  c.series.push_back(s);
  return c;
}

}  // namespace

TEST_CASE("Chart.NiceTicks.AwkwardRanges") {
  CHECK(nice_step(5279, 5) == doctest::Approx(2000));
  CHECK(nice_ticks(0, 5279, 2000) == std::vector<double>{0, 2000, 4000, 6000});
  CHECK(nice_step(0.56, 5) == doctest::Approx(0.2));
  const auto t = nice_ticks(0.37, 0.93, 0.2);
  REQUIRE(t.size() == 5);
  CHECK(t.front() == doctest::Approx(0.2));
  CHECK(t.back() == doctest::Approx(1.0));
  CHECK(nice_step(100, 10) == doctest::Approx(10));  // an exact fit is not rounded up
  CHECK(nice_ticks(-3, 7, 5) == std::vector<double>{-5, 0, 5, 10});
}

TEST_CASE("Chart.Render.RoundYTicksFromZero") {
  const std::string svg = render(line_chart({1, 2, 3}, {2640, 5279, 3000}));
  const auto labels = texts(svg);
  for (const char* want : {"0", "2000", "4000", "6000"}) {
    CAPTURE(want);
    CHECK(has(labels, want));
  }
  CHECK_FALSE(has(labels, "5279"));
  CHECK_FALSE(has(labels, "2640"));
  CHECK(has(labels, "epoch"));      // axis titles
  CHECK(has(labels, "samples/s"));
  CHECK(svg.find("<title>t</title>") != std::string::npos);
}

TEST_CASE("Chart.Render.XLabelsEveryEpochOrAtRoundIntervals") {
  auto labels = texts(render(line_chart({1, 2, 3, 4}, {5, 6, 7}, true)));
  for (const char* want : {"1", "2", "3", "4"}) CHECK(has(labels, want));
  CHECK_FALSE(has(labels, "1.5"));  // epochs are whole numbers
  std::vector<double> x, y;
  for (int e = 1; e <= 101; ++e) x.push_back(e);
  y.assign(100, 1.0);
  labels = texts(render(line_chart(x, y, true)));
  for (const char* want : {"20", "40", "60", "80", "100"}) CHECK(has(labels, want));
  CHECK_FALSE(has(labels, "30"));
  CHECK_FALSE(has(labels, "101"));
}

// A log10 x axis: ticks at the powers of ten the data spans, labelled with the values, and 100
// halfway between 10 and 1000.
TEST_CASE("Chart.Render.LogXTicksAtPowersOfTen") {
  Chart c;
  c.x_log = true;
  Series s;
  s.x = {10, 100, 1000};
  s.y = {0.5, 0.6, 0.7};
  c.series = {s};
  const std::string svg = render(c);
  const auto labels = texts(svg);
  for (const char* want : {"10", "100", "1000"}) CHECK(has(labels, want));
  CHECK_FALSE(has(labels, "2"));  // not the log10 of a value
  const auto p = polyline(svg);
  REQUIRE(p.size() == 3);
  CHECK(p[1].first - p[0].first == doctest::Approx(p[2].first - p[1].first).epsilon(1e-3));
}

TEST_CASE("Chart.Render.StepLinesAreHorizontalRuns") {
  const auto p = polyline(render(line_chart({1, 2, 3}, {10, 20}, true)));
  REQUIRE(p.size() == 4);               // two runs of two points
  CHECK(p[0].second == p[1].second);    // flat over epoch 1
  CHECK(p[2].second == p[3].second);    // flat over epoch 2
  CHECK(p[1].first == p[2].first);      // a vertical jump at epoch 2
  CHECK(p[2].second < p[1].second);     // upwards (SVG y grows downwards)
  const auto q = polyline(render(line_chart({1, 2, 3}, {10, 20, 15})));
  CHECK(q.size() == 3);                 // a plain line joins the points
}

TEST_CASE("Chart.Render.EqualLinesStayVisible") {
  Chart c = line_chart({1, 2, 3}, {64, 64}, true);
  c.series.push_back(c.series[0]);  // rank 1 with the same batch sizes
  const std::string svg = render(c);
  REQUIRE(count(svg, "<polyline") == 2);
  CHECK(polyline(svg, 0) == polyline(svg, 1));
  const std::size_t first = svg.find("stroke-width=\"", svg.find("<polyline")) + 14;
  const std::size_t second = svg.find("stroke-width=\"", svg.rfind("<polyline")) + 14;
  CHECK(std::stod(svg.substr(first)) > std::stod(svg.substr(second)) + 1);  // the first is wider
}

TEST_CASE("Chart.Escape.OneFunctionForTextAndAttributes") {
  CHECK(escape("a<b & \"c\" 'd'") == "a&lt;b &amp; &quot;c&quot; &#39;d&#39;");
  CHECK(escape(std::string("x\x01y\tz\n")) == "x?y\tz\n");  // no control characters in XML
  Chart c = line_chart({1, 2}, {1, 2});
  c.title = "job <script>&";
  c.series[0].label = "rank \"0\"";
  const std::string svg = render(c);
  CHECK(svg.find("<script") == std::string::npos);
  CHECK(svg.find("job &lt;script&gt;&amp;") != std::string::npos);
  CHECK(svg.find("rank &quot;0&quot;") != std::string::npos);
}

TEST_CASE("Chart.PerRank.LinesUpToEightThenBands") {
  const std::vector<double> x{1, 2, 3};
  std::vector<std::vector<double>> rows(2, std::vector<double>(8));
  for (std::size_t i = 0; i < 8; ++i) rows[0][i] = rows[1][i] = 10.0 * static_cast<double>(i);
  const auto lines = per_rank(x, rows, true);
  REQUIRE(lines.size() == 8);
  CHECK(lines[7].label == "rank 7");
  CHECK(lines[7].y == std::vector<double>{70, 70});
  CHECK(lines[7].step);

  rows.assign(2, {});
  for (int i = 0; i < 11; ++i) rows[0].push_back(i), rows[1].push_back(100 - i);  // 11 ranks
  const auto spread = per_rank(x, rows, true);
  REQUIRE(spread.size() == 3);
  CHECK(spread[0].band);
  CHECK(spread[0].label == "min-max");
  CHECK(spread[0].y == std::vector<double>{0, 90});
  CHECK(spread[0].high == std::vector<double>{10, 100});
  CHECK(spread[1].label == "10th-90th percentile");
  CHECK(spread[1].y == std::vector<double>{1, 91});
  CHECK(spread[1].high == std::vector<double>{9, 99});
  CHECK_FALSE(spread[2].band);
  CHECK(spread[2].label == "median");
  CHECK(spread[2].y == std::vector<double>{5, 95});

  Chart c;
  c.series = spread;
  const std::string svg = render(c);
  CHECK(count(svg, "<polygon") == 2);
  CHECK(count(svg, "<polyline") == 1);
  CHECK(svg.find("rank 10") == std::string::npos);
}

TEST_CASE("Chart.Render.EmptyAndLegendRows") {
  Chart empty;
  empty.title = "nothing";
  CHECK(has(texts(render(empty)), "no data yet"));
  Chart many = line_chart({1, 2}, {1, 2});
  for (int i = 1; i < 8; ++i) {
    many.series.push_back(many.series[0]);
    many.series.back().label = "rank " + std::to_string(i);
  }
  const auto height = [](const std::string& svg) {
    const std::size_t at = svg.find("height=\"") + 8;
    return std::stod(svg.substr(at, svg.find('"', at) - at));
  };
  const double one_row = height(render(many));
  CHECK(one_row == doctest::Approx(322));  // 300 px and one legend row
  many.width = 300;
  const std::string narrow = render(many);
  CHECK(height(narrow) > one_row + 17);    // the legend wraps into more rows
  CHECK(has(texts(narrow), "rank 7"));
}

TEST_CASE("Chart.PerRank.EqualLinesDifferInDashPattern") {
  const std::vector<std::vector<double>> rows{{64, 64}, {64, 64}};  // two ranks, equal batches
  Chart c;
  c.series = per_rank({0.5, 1.5, 2.5}, rows, true);
  REQUIRE(c.series.size() == 2);
  CHECK(c.series[0].dash.empty());
  CHECK_FALSE(c.series[1].dash.empty());
  CHECK(c.series[0].color != c.series[1].color);
  const std::string svg = render(c);
  REQUIRE(count(svg, "<polyline") == 2);
  CHECK(polyline(svg, 0) == polyline(svg, 1));  // same values: the dashes keep both visible
  const std::size_t second = svg.rfind("<polyline");
  CHECK(svg.substr(second, svg.find("/>", second) - second).find("stroke-dasharray=\"7,4\"") !=
        std::string::npos);
  CHECK(count(svg, "stroke-dasharray=\"7,4\"") == 2);  // the line and its legend entry
  for (std::size_t k = 0; k < 4; ++k)
    for (std::size_t j = k + 1; j < 4; ++j) CHECK(dash_pattern(k) != dash_pattern(j));
}

TEST_CASE("Chart.Render.EpochsCentredUnderTheirSteps") {
  // Epochs 1..6 as steps over [e - 0.5, e + 0.5): the x axis labels 1..6 and nothing else.
  Chart c = line_chart({0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5}, {1000, 2000, 3000, 4000, 5000, 6000},
                       true);
  c.y_from_zero = false;  // y ticks 1000..6000: every short label is an x tick
  const auto labels = texts(render(c));
  for (const char* want : {"1", "2", "3", "4", "5", "6"}) CHECK(has(labels, want));
  CHECK_FALSE(has(labels, "0"));
  CHECK_FALSE(has(labels, "7"));
  CHECK_FALSE(has(labels, "0.5"));
}
