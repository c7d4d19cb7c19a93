// render_page: the status page at /. Well-formed XHTML (so a test can parse it as XML) with
// the charts as inline SVG; it refreshes itself every 5 s and needs no network.
#include <algorithm>
#include <cstdio>

#include "scheduler/serve/views.h"

namespace dbs::scheduler {
namespace {

constexpr std::size_t kRanksCharted = 8;  // more ranks are charted as min, median and max
constexpr int kRowsShown = 64;            // table rows per job

std::string fixed(double x, int digits = 1) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, x);
  return buf;
}

// Rows of history -> one series per rank, or min / median / max over the ranks.
void series_of(const Job& job, bool batch, std::vector<std::vector<double>>& series,
               std::vector<std::string>& names) {
  const auto& h = job.history();
  const auto world = static_cast<std::size_t>(job.world());
  const auto value = [&](const EpochHistory& row, std::size_t r) {
    return batch ? static_cast<double>(row.batch[r]) : row.throughput[r];
  };
  if (world <= kRanksCharted) {
    series.assign(world, {});
    for (std::size_t r = 0; r < world; ++r) {
      names.push_back("rank " + std::to_string(r));
      for (const auto& row : h) series[r].push_back(value(row, r));
    }
    return;
  }
  series.assign(3, {});
  names = {"min", "median", "max"};
  std::vector<double> v(world);
  for (const auto& row : h) {
    for (std::size_t r = 0; r < world; ++r) v[r] = value(row, r);
    std::sort(v.begin(), v.end());
    series[0].push_back(v.front());
    series[1].push_back(v[world / 2]);
    series[2].push_back(v.back());
  }
}

std::string job_section(const std::string& id, const LiveJob& live) {
  const Job& j = *live.job;
  const policy::Plan& p = j.current();
  std::string s =
      "<section><h2>job " + escape_xml(id) + " <small>" + (live.finished ? "finished" : "running") +
      ", epoch " + std::to_string(p.epoch + 1) + ", " + std::to_string(live.connected()) + "/" +
      std::to_string(j.world()) + " ranks connected, policy " + escape_xml(j.config().policy) +
      ", global batch " + std::to_string(j.config().global_batch) + "</small></h2>";
  s += "<p>plan: " + escape_xml(p.reason) + "</p>";
  s += "<p>" + std::to_string(j.plans()) + " plans, " + std::to_string(j.changes()) + " changes, " +
       std::to_string(j.reports()) + " reports, " + std::to_string(j.timeouts()) +
       " report timeouts</p>";
  s += "<table><thead><tr><th>rank</th><th>host</th><th>connected</th><th>batch</th>"
       "<th>samples/s</th><th>last epoch</th></tr></thead><tbody>";
  for (int r = 0; r < j.world() && r < kRowsShown; ++r) {
    const auto i = static_cast<std::size_t>(r);
    const policy::Report& last = j.last_reports()[i];
    const double v = last.throughput();
    s += "<tr><td>" + std::to_string(r) + "</td><td>" + escape_xml(j.hosts()[i]) + "</td><td>" +
         (live.sessions[i] != nullptr ? "yes" : "no") + "</td><td>" + std::to_string(p.batch[i]) +
         "</td><td>" + fixed(v) + "</td><td>" +
         (last.epoch >= 0 ? std::to_string(last.epoch + 1) : "-") + "</td></tr>";
  }
  if (j.world() > kRowsShown)
    s += "<tr><td colspan=\"6\">and " + std::to_string(j.world() - kRowsShown) +
         " more ranks</td></tr>";
  s += "</tbody></table><div class=\"charts\">";
  std::vector<std::int64_t> epochs;
  for (const auto& row : j.history()) epochs.push_back(row.epoch + 1);
  for (const bool batch : {false, true}) {
    std::vector<std::vector<double>> series;
    std::vector<std::string> names;
    series_of(j, batch, series, names);
    s += svg_chart(batch ? "batch size per rank" : "throughput per rank",
                   batch ? "samples" : "samples/s", epochs, series, names);
  }
  return s + "</div></section>";
}

}  // namespace

std::string render_page(const JobTable& jobs, const Stats& st) {
  std::string s =
      "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\"><head>"
      "<meta charset=\"utf-8\"/><meta http-equiv=\"refresh\" content=\"5\"/>"
      "<title>dbs-scheduler</title><style>"
      "body{font-family:sans-serif;margin:1em 2em;color:#222}"
      "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 8px;"
      "text-align:right}th{background:#f4f4f4}small{color:#666;font-weight:normal}"
      ".charts{display:flex;flex-wrap:wrap;gap:1em}svg text{font-size:11px}svg .t{font-size:12px;"
      "font-weight:bold}</style></head><body><h1>dbs-scheduler</h1>";
  s += "<p>up " + fixed(st.uptime_s, 0) + " s, " + std::to_string(jobs.running()) +
       " running job(s), " + std::to_string(st.connections) + " agent connection(s), " +
       std::to_string(st.messages) +
       " messages. Also: <a href=\"/status\">/status</a>, "
       "<a href=\"/metrics\">/metrics</a>.</p>";
  if (jobs.jobs().empty()) s += "<p>No jobs yet.</p>";
  for (const auto& [id, live] : jobs.jobs()) s += job_section(id, *live);
  return s + "</body></html>\n";
}

}  // namespace dbs::scheduler
