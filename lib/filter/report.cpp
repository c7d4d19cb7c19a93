#include "lib/filter/report.h"

#include "lib/chart/chart.h"
#include "lib/chart/page.h"
#include "lib/common/format.h"

namespace dbs::filter {
namespace {

std::string name_of(const ReportInfo& info, std::int32_t c) {
  const auto k = static_cast<std::size_t>(c);
  return k < info.class_names.size() ? info.class_names[k] : "class " + std::to_string(c);
}

// Kept and removed points of class c (c < 0: every class, each its own kept series).
chart::Scatter class_scatter(const FilterResult& r, const std::int32_t* labels, std::int32_t c,
                             const ReportInfo& info) {
  chart::Scatter s;
  s.axes = false;
  const std::size_t n = r.removed.size();
  chart::ScatterSeries removed{"removed", "#000000", {}, {}, 2.5, 0.9, true};
  if (c < 0) {
    s.title = "all classes";
    s.width = s.height = 720;
    for (const auto& cs : r.classes) {
      chart::ScatterSeries k{name_of(info, cs.label),
                             chart::color(static_cast<std::size_t>(cs.label)),
                             {},
                             {},
                             2.0,
                             0.6,
                             false};
      for (std::size_t i = 0; i < n; ++i)
        if (labels[i] == cs.label && !r.removed[i]) {
          k.x.push_back(r.embedding[2 * i]);
          k.y.push_back(r.embedding[2 * i + 1]);
        }
      s.series.push_back(std::move(k));
    }
  } else {
    const ClassStats& cs = r.classes[static_cast<std::size_t>(c)];
    s.title = name_of(info, c) + ": " + std::to_string(cs.removed) + " of " +
              std::to_string(cs.samples) + " removed";
    s.width = s.height = 340;
    removed.color = "#d62728";
    chart::ScatterSeries k{"kept", chart::color(static_cast<std::size_t>(c)), {}, {}, 2.0, 0.6,
                           false};
    for (std::size_t i = 0; i < n; ++i)
      if (labels[i] == c && !r.removed[i]) {
        k.x.push_back(r.embedding[2 * i]);
        k.y.push_back(r.embedding[2 * i + 1]);
      }
    s.series.push_back(std::move(k));
  }
  for (std::size_t i = 0; i < n; ++i)
    if (r.removed[i] && (c < 0 || labels[i] == c)) {
      removed.x.push_back(r.embedding[2 * i]);
      removed.y.push_back(r.embedding[2 * i + 1]);
    }
  s.series.push_back(std::move(removed));
  return s;
}

}  // namespace

std::string html_report(const FilterResult& r, const std::int32_t* labels, const ReportInfo& info) {
  using chart::escape;
  std::string o = "<h1>" + escape(info.title) + "</h1>\n";
  o += "<h2>Settings</h2>\n<table>\n";
  for (const auto& [k, v] : info.settings)
    o += "<tr><td>" + escape(k) + "</td><td>" + escape(v) + "</td></tr>\n";
  o += "</table>\n<h2>Removed per class</h2>\n<table>\n<tr><th>class</th><th>samples</th>"
       "<th>clusters</th><th>eps</th><th>removed</th><th>removed %</th></tr>\n";
  std::size_t total = 0, removed = 0;
  for (const auto& cs : r.classes) {
    total += cs.samples;
    removed += cs.removed;
    o += "<tr><td>" + escape(name_of(info, cs.label)) + "</td><td>" + std::to_string(cs.samples) +
         "</td><td>" + std::to_string(cs.clusters) + "</td><td>" + format("%.4g", cs.eps) +
         "</td><td>" + std::to_string(cs.removed) + "</td><td>" +
         format("%.2f", cs.samples ? 100.0 * double(cs.removed) / double(cs.samples) : 0.0) +
         "</td></tr>\n";
  }
  o += "<tr><th>all</th><th>" + std::to_string(total) + "</th><th></th><th></th><th>" +
       std::to_string(removed) + "</th><th>" +
       format("%.2f", total ? 100.0 * double(removed) / double(total) : 0.0) +
       "</th></tr>\n</table>\n";
  o += "<p>t-SNE: KL divergence " + format("%.4f", r.tsne.kl) + "; seconds: PCA " +
       format("%.2f", r.pca_s) + ", neighbours " + format("%.2f", r.tsne.neighbours_s) +
       ", affinities " + format("%.2f", r.tsne.affinity_s) + ", optimisation " +
       format("%.2f", r.tsne.optimise_s) + ", DBSCAN " + format("%.3f", r.dbscan_s) + ".</p>\n";
  o += "<h2>Embedding</h2>\n" + chart::render(class_scatter(r, labels, -1, info));
  o += "<h2>Per class (removed samples as red crosses)</h2>\n<div class=\"grid\">\n";
  for (const auto& cs : r.classes) o += chart::render(class_scatter(r, labels, cs.label, info));
  o += "</div>\n";
  return chart::html_page({info.title,
                           "body{margin:24px}td,th{padding:3px 8px}"
                           "td:first-child,th:first-child{text-align:left}"
                           ".grid{display:flex;flex-wrap:wrap;gap:8px}",
                           ""},
                          o);
}

}  // namespace dbs::filter
