// render_status: /status as JSON.
#include <algorithm>

#include "lib/chart/chart.h"
#include "lib/proto/codec.h"
#include "scheduler/serve/views.h"

namespace dbs::scheduler {

nlohmann::json render_status(const JobTable& jobs, const Stats& st, bool with_jobs) {
  using nlohmann::json;
  json rejected = json::object();
  for (std::size_t c = 0; c < st.rejected.size(); ++c)
    rejected[proto::name(static_cast<proto::ErrorCode>(c))] = st.rejected[c];
  json out = {{"daemon",
               {{"protocol", proto::kVersion},
                {"uptime_s", st.uptime_s},
                {"connections", st.connections},
                {"messages", st.messages},
                {"rejected", rejected},
                {"journal_syncs", st.journal_syncs},
                {"report_timeout_s", st.report_timeout_s}}},
              {"jobs", json::array()}};
  out["daemon"]["jobs_running"] = jobs.running();
  out["daemon"]["jobs_finished"] = jobs.jobs().size() - jobs.running();
  out["quarantined"] = json::array();
  for (const auto& q : jobs.quarantined())
    out["quarantined"].push_back(
        {{"job", with_jobs ? q.job : ""}, {"why", with_jobs ? q.why : ""}, {"path", q.path}});
  if (!with_jobs) {
    out.erase("jobs");
    out["hidden"] = "job ids and hosts are shown on loopback or with the daemon token";
    return out;
  }
  for (const auto& [id, live] : jobs.jobs()) {
    const Job& j = *live->job;
    json ranks = json::array();
    const int shown = std::min(j.world(), kRanksShown);
    for (int r = 0; r < shown; ++r) {
      const auto i = static_cast<std::size_t>(r);
      const policy::Report& last = j.last_reports()[i];
      ranks.push_back(
          {{"rank", r},
           {"host", j.hosts()[i]},
           {"connected", live->sessions[i] != nullptr},
           {"batch", j.current().batch[i]},
           {"throughput",
            last.throughput()},
           {"last_epoch", last.epoch + 1}});
    }
    double efficiency = 0;
    for (auto it = j.history().rbegin(); it != j.history().rend() && efficiency == 0; ++it)
      efficiency = it->efficiency;
    json plan = policy::to_json(j.current());
    for (const char* key : {"batch", "offset", "throughput"})
      if (plan.contains(key) && plan[key].size() > static_cast<std::size_t>(shown))
        plan[key].get_ref<json::array_t&>().resize(static_cast<std::size_t>(shown));
    out["jobs"].push_back({{"job", id},
                           {"state", live->finished ? "finished" : "running"},
                           {"world", j.world()},
                           {"connected", live->connected()},
                           {"config", policy::to_json(j.config())},
                           {"epoch", j.current().epoch + 1},
                           {"reports", j.reports()},
                           {"plans", j.plans()},
                           {"plan_changes", j.changes()},
                           {"report_timeouts", j.timeouts()},
                           {"efficiency", efficiency},
                           {"plan", plan},  // per-rank arrays: the first ranks_shown ranks
                           {"ranks_shown", shown},
                           {"ranks", ranks}});
  }
  return out;
}

std::string render_quarantine(const JobTable& jobs) {
  std::string s;
  for (const auto& q : jobs.quarantined())
    s += "<li>" +
         (q.job.empty() ? std::string("unreadable journal lines")
                        : "job '" + chart::escape(q.job) + "'") +
         ": " + chart::escape(q.why) + " (moved to " + chart::escape(q.path) + ")</li>";
  if (s.empty()) return s;
  return "<h2>Quarantined at restore</h2><ul>" + s + "</ul>";
}

std::string render_public_page(const JobTable& jobs, const Stats& st) {
  return "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>dbs-scheduler</title>"
         "</head><body><h1>dbs-scheduler</h1><p>" +
         std::to_string(jobs.running()) + " jobs running, " + std::to_string(st.connections) +
         " agent connections. Job ids and hosts are shown on loopback or with the daemon token "
         "(Authorization: Bearer).</p></body></html>\n";
}

}  // namespace dbs::scheduler
