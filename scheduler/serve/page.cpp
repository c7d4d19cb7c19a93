// render_page: the status page at /. Well-formed XHTML (so a test can parse it as XML) with
// the charts as inline SVG; it refreshes itself every 5 s and needs no network.
#include "lib/chart/chart.h"
#include "lib/common/format.h"
#include "scheduler/serve/views.h"

namespace dbs::scheduler {
namespace {

constexpr int kRowsShown = 64;  // table rows per job

// Throughput or batch size per rank over the epochs: each epoch's value holds over [e, e + 1).
std::string rank_chart(const Job& job, bool batch) {
  std::vector<double> x;
  std::vector<std::vector<double>> rows;
  for (const auto& row : job.history()) {
    x.push_back(static_cast<double>(row.epoch + 1));
    rows.push_back(batch ? std::vector<double>(row.batch.begin(), row.batch.end()) : row.throughput);
  }
  if (!x.empty()) x.push_back(x.back() + 1);
  chart::Chart c{batch ? "Batch size per rank" : "Throughput per rank", "epoch",
                 batch ? "samples per step" : "samples/s", chart::per_rank(x, rows, true)};
  c.width = 560;
  c.height = 260;
  return chart::render(c);
}

std::string job_section(const std::string& id, const LiveJob& live) {
  const Job& j = *live.job;
  const policy::Plan& p = j.current();
  std::string s =
      "<section><h2>job " + chart::escape(id) + " <small>" + (live.finished ? "finished" : "running") +
      ", epoch " + std::to_string(p.epoch + 1) + ", " + std::to_string(live.connected()) + "/" +
      std::to_string(j.world()) + " ranks connected, policy " + chart::escape(j.config().policy) +
      ", global batch " + std::to_string(j.config().global_batch) + "</small></h2>";
  s += "<p>plan: " + chart::escape(p.reason) + "</p>";
  s += "<p>" + std::to_string(j.plans()) + " plans, " + std::to_string(j.changes()) + " changes, " +
       std::to_string(j.reports()) + " reports, " + std::to_string(j.timeouts()) +
       " report timeouts</p>";
  s += "<table><thead><tr><th>rank</th><th>host</th><th>connected</th><th>batch</th>"
       "<th>samples/s</th><th>last epoch</th></tr></thead><tbody>";
  for (int r = 0; r < j.world() && r < kRowsShown; ++r) {
    const auto i = static_cast<std::size_t>(r);
    const policy::Report& last = j.last_reports()[i];
    const double v = last.throughput();
    s += "<tr><td>" + std::to_string(r) + "</td><td>" + chart::escape(j.hosts()[i]) + "</td><td>" +
         (live.sessions[i] != nullptr ? "yes" : "no") + "</td><td>" + std::to_string(p.batch[i]) +
         "</td><td>" + format("%.1f", v) + "</td><td>" +
         (last.epoch >= 0 ? std::to_string(last.epoch + 1) : "-") + "</td></tr>";
  }
  if (j.world() > kRowsShown)
    s += "<tr><td colspan=\"6\">and " + std::to_string(j.world() - kRowsShown) +
         " more ranks</td></tr>";
  s += "</tbody></table><div class=\"charts\">";
  s += rank_chart(j, false) + rank_chart(j, true);
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
      ".charts{display:flex;flex-wrap:wrap;gap:1em}</style></head><body><h1>dbs-scheduler</h1>";
  s += "<p>up " + format("%.0f", st.uptime_s) + " s, " + std::to_string(jobs.running()) +
       " running job(s), " + std::to_string(st.connections) + " agent connection(s), " +
       std::to_string(st.messages) +
       " messages. Also: <a href=\"/status\">/status</a>, "
       "<a href=\"/metrics\">/metrics</a>.</p>";
  s += render_quarantine(jobs);
  if (jobs.jobs().empty()) s += "<p>No jobs yet.</p>";
  for (const auto& [id, live] : jobs.jobs()) s += job_section(id, *live);
  return s + "</body></html>\n";
}

}  // namespace dbs::scheduler
