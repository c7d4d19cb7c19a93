// The study's HTML page: settings, one table row per configuration, and the charts (lib/chart):
// test accuracy against epoch (one line per configuration, the mean of its seeds, their range
// shaded); the recipe adds the learning rate against epoch, filtering one accuracy chart per
// batch and the final accuracy against log2 of the batch, one line per data set.
#include <algorithm>
#include <cmath>
#include <set>

#include "lab/study.h"
#include "lab/study_groups.h"
#include "lib/chart/chart.h"
#include "lib/chart/page.h"
#include "lib/common/format.h"

namespace dbs::lab {
namespace {

std::string td(const std::string& s) {
  return "<td>" + chart::escape(s) + "</td>";
}

// Recipe lines: one colour per warmup length (the base-batch reference first), dashed without
// lr scaling, so each warmup's scaled and unscaled runs pair up; with several large batches, the
// smaller ones with markers. Otherwise one colour per group.
struct Style {
  std::string color, dash;
  bool markers = false;
};
Style style(const std::vector<const Group*>& groups, std::size_t k, bool recipe) {
  if (!recipe) return {chart::color(k), "", false};
  std::set<double> warmups;
  int largest = 0;
  for (const Group* g : groups)
    if (g->runs.front()->global_batch != g->runs.front()->base_batch) {
      warmups.insert(g->runs.front()->warmup_epochs);
      largest = std::max(largest, g->runs.front()->global_batch);
    }
  const StudyRun& r = *groups[k]->runs.front();
  if (r.global_batch == r.base_batch) return {chart::color(0), "", false};
  const auto index =
      static_cast<std::size_t>(std::distance(warmups.begin(), warmups.find(r.warmup_epochs)));
  return {chart::color(1 + index), r.lr_scaling == "none" ? chart::dash_pattern(1) : "",
          r.global_batch != largest};
}

// The lines of the groups' test accuracy against epoch; bands (min-max over seeds) first.
std::string accuracy_chart(const std::vector<const Group*>& groups, const std::string& title,
                           bool recipe) {
  chart::Chart ch;
  ch.title = title;
  ch.x_label = "epoch";
  ch.y_label = "test accuracy (%)";
  ch.y_from_zero = false;
  std::vector<chart::Series> bands, lines;
  for (std::size_t k = 0; k < groups.size(); ++k) {
    const Group& g = *groups[k];
    const StudyRun& r = *g.runs.front();
    chart::Series line, band;
    const Style st = style(groups, k, recipe);
    line.label = g.label;
    line.color = band.color = st.color;
    line.dash = st.dash;
    line.markers = st.markers;
    band.band = true;
    band.opacity = 0.15;
    for (std::size_t e = 1; e <= r.epochs.size(); ++e) {
      const Stats s = epoch_stats(g, static_cast<int>(e));
      line.x.push_back(static_cast<double>(e));
      line.y.push_back(100 * s.mean);
      band.x.push_back(static_cast<double>(e));
      band.y.push_back(100 * s.min);
      band.high.push_back(100 * s.max);
    }
    if (g.runs.size() > 1) bands.push_back(band);
    lines.push_back(line);
  }
  ch.series = bands;
  ch.series.insert(ch.series.end(), lines.begin(), lines.end());
  ch.height = 380;
  return chart::render(ch);
}

// The learning rate at each epoch's start (the first seed's; every seed has the same schedule).
std::string lr_chart(const std::vector<const Group*>& groups) {
  chart::Chart ch;
  ch.title = "learning rate at the start of each epoch";
  ch.x_label = "epoch";
  ch.y_label = "learning rate";
  for (std::size_t k = 0; k < groups.size(); ++k) {
    const StudyRun& r = *groups[k]->runs.front();
    chart::Series s;
    const Style st = style(groups, k, true);
    s.label = groups[k]->label;
    s.color = st.color;
    s.dash = st.dash;
    s.markers = st.markers;
    for (const StudyEpoch& e : r.epochs) {
      s.x.push_back(e.epoch);
      s.y.push_back(e.lr);
    }
    ch.series.push_back(s);
  }
  return chart::render(ch);
}

// Final accuracy against log2(batch), one line per data set.
std::string batch_chart(const std::vector<Group>& groups) {
  chart::Chart ch;
  ch.title = "final test accuracy against global batch (mean of the seeds)";
  ch.x_label = "log2 of the global batch (7 = 128, 11 = 2,048, 13 = 8,192)";
  ch.y_label = "test accuracy (%)";
  ch.y_from_zero = false;
  std::size_t k = 0;
  for (const char* d : {"full", "filtered", "random"}) {
    chart::Series s;
    s.label = d;
    s.color = chart::color(k);
    s.dash = chart::dash_pattern(k++);
    s.markers = true;
    for (const Group& g : groups)
      if (g.runs.front()->data == d) {
        s.x.push_back(std::log2(g.runs.front()->global_batch));
        s.y.push_back(100 * final_stats(g).mean);
      }
    if (!s.x.empty()) ch.series.push_back(s);
  }
  return chart::render(ch);
}

std::string settings_text(const std::vector<StudyRun>& runs) {
  std::set<std::string> parts;
  std::set<unsigned> seeds;
  for (const StudyRun& r : runs) {
    std::string p = format("%s, %s lr %g at batch %d", r.model.c_str(), r.optimizer.c_str(), r.lr,
                           r.base_batch);
    if (r.optimizer == "sgd") p += format(" (momentum %g)", r.momentum);
    p += format(", %d rank(s) x %d thread(s), policy %s, %zu epochs of %lld samples", r.ranks,
                r.threads, r.policy.c_str(), r.epochs.size(), r.train_samples);
    parts.insert(p);
    seeds.insert(r.seed);
  }
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
  std::string s;
  for (unsigned x : seeds) s += (s.empty() ? "" : ", ") + std::to_string(x);
  return out + ". Seeds " + s + ".";
}

}  // namespace

std::string study_html(const std::vector<StudyRun>& runs, const std::string& source) {
  const std::vector<Group> groups = group_runs(runs);
  const bool recipe = runs.front().study == "recipe";
  const std::string title = recipe ? "the large-batch recipe" : "training on filtered data";
  std::string h = "<h1>dbs-lab study: " + title + "</h1>\n<p>" +
                  chart::escape(settings_text(runs)) + " Records: " + chart::escape(source) +
                  ".</p>\n";
  h += "<table><tr><th>configuration</th><th>peak lr</th><th>final test accuracy per seed (%)"
       "</th><th>mean ± ½ range</th><th>best epoch (mean, %)</th><th>wall s (mean)</th></tr>\n";
  for (const Group& g : groups) {
    std::string seeds;
    double wall = 0;
    for (const StudyRun* r : g.runs) {
      seeds += (seeds.empty() ? "" : " / ") + format("%.2f", 100 * r->final_test_acc);
      wall += r->wall_s / static_cast<double>(g.runs.size());
    }
    double best = 0;
    for (std::size_t e = 1; e <= g.runs.front()->epochs.size(); ++e)
      best = std::max(best, epoch_stats(g, static_cast<int>(e)).mean);
    const Stats f = final_stats(g);
    h += "<tr>" + td(g.label) + td(format("%.4g", peak_lr(*g.runs.front()))) + td(seeds) +
         td(format("%.2f ± %.2f", 100 * f.mean, 50 * (f.max - f.min))) +
         td(format("%.2f", 100 * best)) + td(format("%.0f", wall)) + "</tr>\n";
  }
  h += "</table>\n";
  std::vector<const Group*> all;
  for (const Group& g : groups) all.push_back(&g);
  if (recipe) {
    h += accuracy_chart(all, "test accuracy against epoch (mean of the seeds; their range shaded)",
                        true) +
         "\n" + lr_chart(all) + "\n";
  } else {
    h += batch_chart(groups) + "\n";
    std::set<int> batches;
    for (const Group& g : groups) batches.insert(g.runs.front()->global_batch);
    for (int b : batches) {
      std::vector<const Group*> of;
      for (const Group& g : groups)
        if (g.runs.front()->global_batch == b) of.push_back(&g);
      h += accuracy_chart(of, format("test accuracy against epoch at global batch %d", b), false) +
           "\n";
    }
  }
  return chart::html_page(
      {"dbs-lab study: " + title, "body{margin:2em}td:first-child{text-align:left}", ""}, h);
}

}  // namespace dbs::lab
