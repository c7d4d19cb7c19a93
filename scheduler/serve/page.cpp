// render_page: the status page at /. Well-formed XHTML (so a test can parse it as XML) with
// the charts as inline SVG; it refreshes itself every 5 s and needs no network. Running jobs
// come first; each shows what ran (the table's "ran" columns are the charts' last step) and,
// while it runs, the plan of the epoch running now.
#include "lib/chart/page.h"

#include <algorithm>

#include "lib/chart/chart.h"
#include "lib/common/format.h"
#include "scheduler/serve/views.h"

namespace dbs::scheduler {
namespace {

constexpr int kRowsShown = 64;  // table rows per job
constexpr int kRanksNamed = 8;  // ranks named in the not-connected warning

// Throughput or batch size per rank over the epochs. Epoch e (from 1) is the step over
// [e - 0.5, e + 0.5), so the x axis labels each epoch under its step and no epoch that did not
// run appears.
std::string rank_chart(const Job& job, bool batch) {
  std::vector<double> x;
  std::vector<std::vector<double>> rows;
  for (const auto& row : job.history()) {
    x.push_back(static_cast<double>(row.epoch) + 0.5);
    rows.push_back(batch ? std::vector<double>(row.batch.begin(), row.batch.end())
                         : row.throughput);
  }
  if (!x.empty()) x.push_back(x.back() + 1);
  chart::Chart c{batch ? "Batch size per rank" : "Throughput per rank", "epoch",
                 batch ? "samples per step" : "samples/s", chart::per_rank(x, rows, true)};
  c.width = 560;
  c.height = 260;
  return chart::render(c);
}

std::string seconds(double s) {
  return s > 0 ? format("%.3g s", s) : "-";
}

// The exchange's part of the predicted epoch, and where it is most of it in a job that exchanges
// every step, that fewer exchanges would shorten it: " (exchange 2.1 s, 64 %: ...)".
std::string exchange_note(const Plan& p, const Settings& settings) {
  if (!(p.exchange_epoch_s > 0) || !(p.predicted_epoch_s > 0)) return "";
  const double share = p.exchange_epoch_s / p.predicted_epoch_s;
  std::string out = " (exchange <span class=\"exchange\">" + seconds(p.exchange_epoch_s) +
                    "</span>, " + format("%.0f %%", 100 * share);
  if (share >= 0.5 && !settings.averages_in(p.epoch))
    out +=
        ": balancing cannot shorten it; averaging the models every few steps "
        "(--average-every) exchanges less";
  return out + ")";
}

// Efficiency, epoch times and the last report's age, each in a span a test can find by class.
std::string figures(const LiveJob& live) {
  const Job& j = *live.job;
  const Plan& p = live.shown_plan();
  const double efficiency = last_efficiency(j);
  const double measured = j.history().empty() ? 0 : j.history().back().measured_s;
  const double age = last_report_age_s(live);
  const auto span = [](const char* cls, const std::string& v) {
    return std::string("<span class=\"") + cls + "\">" + v + "</span>";
  };
  return "<p class=\"figures\">efficiency " +
         span("efficiency", efficiency > 0 ? format("%.1f %%", 100 * efficiency) : "-") +
         " (ideal over measured epoch time); epoch " + std::to_string(live.shown_epoch()) +
         " predicted " + span("predicted", seconds(p.predicted_epoch_s)) +
         exchange_note(p, j.config()) + ", ideal " + span("ideal", seconds(p.ideal_epoch_s)) +
         "; last epoch measured " + span("measured", seconds(measured)) + "; last report " +
         span("report-age", age < 0 ? "none since the daemon started" : format("%.0f s ago", age)) +
         "</p>";
}

// "ranks 1, 3 (host3) not connected" for a job that is not finished; "" when all are.
std::string warning(const LiveJob& live) {
  const Job& j = *live.job;
  if (live.finished || live.connected() == j.world()) return "";
  std::string ranks;
  int named = 0;
  for (int r = 0; r < j.world() && named < kRanksNamed; ++r) {
    if (live.sessions[static_cast<std::size_t>(r)] != nullptr) continue;
    const std::string& host = j.rank_info()[static_cast<std::size_t>(r)].host;
    ranks += (named++ > 0 ? ", " : "") + std::to_string(r) +
             (host.empty() ? "" : " (" + chart::escape(host) + ")");
  }
  const int missing = j.world() - live.connected();
  if (missing > named) ranks += " and " + std::to_string(missing - named) + " more";
  return std::string("<p class=\"warning\">") +
         (live.stopped ? "Stopped: "
          : live.lost  ? "Lost: "
                       : "Warning: ") +
         std::to_string(missing) + " of " + std::to_string(j.world()) +
         " ranks not connected: " + ranks + "</p>";
}

std::string table(const LiveJob& live) {
  const Job& j = *live.job;
  const EpochHistory* last = j.history().empty() ? nullptr : &j.history().back();
  const std::string ran = last != nullptr ? "epoch " + std::to_string(last->epoch + 1) : "ran";
  const bool now = !live.finished;  // a column for the plan of the epoch running now
  std::string s =
      "<table><thead><tr><th>rank</th><th>host</th><th>waits</th><th>connected</th>"
      "<th>batch, " +
      ran + "</th><th>samples/s, " + ran + "</th>" +
      (now ? "<th>batch, epoch " + std::to_string(j.current().epoch + 1) + " (now)</th>" : "") +
      "<th>last report</th></tr></thead><tbody>";
  for (int r = 0; r < j.world() && r < kRowsShown; ++r) {
    const auto i = static_cast<std::size_t>(r);
    const Report& report = j.last_reports()[i];
    const bool reported = last != nullptr && last->batch[i] > 0;
    const RankInfo& info = j.rank_info()[i];
    const std::string waiting = info.waiting.empty() ? "-" : chart::escape(info.waiting);
    s += "<tr class=\"rank\"><td>" + std::to_string(r) + "</td><td>" + chart::escape(info.host) +
         "</td><td class=\"waiting\">" + waiting + "</td><td>" +
         (live.sessions[i] != nullptr ? "yes" : "no") + "</td><td class=\"ran-batch\">" +
         (reported ? std::to_string(last->batch[i]) : "-") + "</td><td class=\"ran-throughput\">" +
         (reported ? format("%.1f", last->throughput[i]) : "-") + "</td>" +
         (now ? "<td class=\"batch\">" + std::to_string(j.current().batch[i]) + "</td>" : "") +
         "<td>" + (report.epoch >= 0 ? "epoch " + std::to_string(report.epoch + 1) : "-") +
         "</td></tr>";
  }
  if (j.world() > kRowsShown)
    s += "<tr><td colspan=\"8\">and " + std::to_string(j.world() - kRowsShown) +
         " more ranks</td></tr>";
  return s + "</tbody></table>";
}

std::string job_section(const LiveJob& live) {
  const Job& j = *live.job;
  const std::string id = chart::escape(j.id());
  std::string s = "<section class=\"job " + std::string(live.state()) + "\" id=\"job-" + id +
                  "\"><h2>job " + id + " <small><span class=\"state\">" + live.state() +
                  "</span>, epoch <span class=\"epoch\">" + std::to_string(live.shown_epoch()) +
                  "</span>, " + std::to_string(live.connected()) + "/" + std::to_string(j.world()) +
                  " ranks connected, policy " + chart::escape(to_string(j.config().policy)) +
                  ", global batch " + std::to_string(j.config().global_batch) + "</small></h2>";
  s += warning(live) + figures(live);
  s += "<p>plan: " + chart::escape(live.shown_plan().reason) + "</p>";
  s += "<p>" + std::to_string(j.plans()) + " plans, " + std::to_string(j.changes()) + " changes, " +
       std::to_string(j.reports()) + " reports, " + std::to_string(j.timeouts()) +
       " report timeouts</p>";
  s += table(live) + "<div class=\"charts\">" + rank_chart(j, false) + rank_chart(j, true);
  return s + "</div></section>";
}

}  // namespace

std::string render_page(const JobTable& jobs, const Stats& st) {
  const chart::PageHead head{
      "dbs-scheduler",
      "body{margin:1em 2em;color:#222}table{margin:.5em 0}th{background:#f4f4f4}"
      "small{color:#666;font-weight:normal}"
      ".warning{background:#fff3cd;border:1px solid #e0b000;padding:4px 8px}"
      "section.lost h2{color:#a00}section.stopped h2{color:#a60}section.finished h2{color:#555}"
      ".charts{display:flex;flex-wrap:wrap;gap:1em}",
      "<meta http-equiv=\"refresh\" content=\"5\"/>"};
  std::string s = "<h1>dbs-scheduler</h1>";
  s += "<p>up " + format("%.0f", st.uptime_s) + " s, " + std::to_string(jobs.in_state("running")) +
       " running job(s), " + std::to_string(jobs.in_state("lost")) + " lost, " +
       std::to_string(jobs.in_state("stopped")) + " stopped, " + std::to_string(st.connections) +
       " agent connection(s), " + std::to_string(st.messages) +
       " messages. Also: <a href=\"/status\">/status</a>, "
       "<a href=\"/metrics\">/metrics</a>.</p>";
  s += render_quarantine(jobs);
  if (jobs.jobs().empty()) s += "<p>No jobs yet.</p>";
  for (const LiveJob* live : jobs_in_order(jobs)) s += job_section(*live);
  return chart::html_page(head, s);
}

}  // namespace dbs::scheduler
