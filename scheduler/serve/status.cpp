// render_status: /status as JSON.
#include <algorithm>

#include "lib/chart/chart.h"
#include "lib/chart/page.h"
#include "lib/proto/codec.h"
#include "scheduler/serve/views.h"

namespace dbs::scheduler {
namespace {

using nlohmann::json;

// What the counts-only view says to its viewer (the rule is Daemon::route's).
const std::string kHiddenWhy =
    "Job ids and hosts are shown with the daemon token (Authorization: Bearer), or to loopback "
    "clients of a daemon run with --http-trust-loopback and without munge";

// A plan's JSON with its per-rank arrays cut to the first `shown` ranks.
json plan_json(const Plan& p, int shown) {
  json plan = policy::to_json(p);
  for (const char* key : {"batch", "offset", "throughput"})
    if (plan.contains(key) && plan[key].size() > static_cast<std::size_t>(shown))
      plan[key].get_ref<json::array_t&>().resize(static_cast<std::size_t>(shown));
  return plan;
}

json job_json(const LiveJob& live) {
  const Job& j = *live.job;
  const Plan& shown_plan = live.shown_plan();
  const EpochHistory* last = j.history().empty() ? nullptr : &j.history().back();
  const int shown = std::min(j.world(), kRanksShown);
  json ranks = json::array();
  for (int r = 0; r < shown; ++r) {
    const auto i = static_cast<std::size_t>(r);
    const Report& report = j.last_reports()[i];
    json rank = {{"rank", r},
                 {"host", j.rank_info()[i].host},
                 {"waiting", j.rank_info()[i].waiting},
                 {"connected", live.sessions[i] != nullptr},
                 {"batch", shown_plan.batch[i]},
                 {"throughput", report.throughput()},
                 {"last_epoch", report.epoch + 1}};
    // What rank r ran in the last planned epoch (the charts' last step; null: no report).
    rank["ran_batch"] = last != nullptr && last->batch[i] > 0 ? json(last->batch[i]) : json();
    rank["ran_throughput"] =
        last != nullptr && last->batch[i] > 0 ? json(last->throughput[i]) : json();
    ranks.push_back(std::move(rank));
  }
  const double age = last_report_age_s(live);
  json out = {{"job", j.id()},
              {"state", live.state()},
              {"world", j.world()},
              {"connected", live.connected()},
              {"config", policy::to_json(j.config())},
              {"epoch", live.shown_epoch()},  // running: the epoch running now; finished: the last
              {"ran_epoch", last != nullptr ? last->epoch + 1 : 0},  // last planned from reports
              {"reports", j.reports()},
              {"plans", j.plans()},
              {"plan_changes", j.changes()},
              {"report_timeouts", j.timeouts()},
              {"efficiency", last_efficiency(j)},
              {"measured_epoch_s", last != nullptr ? last->measured_s : 0.0},
              {"predicted_epoch_s", shown_plan.predicted_epoch_s},
              {"exchange_epoch_s", shown_plan.exchange_epoch_s},
              {"ideal_epoch_s", shown_plan.ideal_epoch_s},
              {"last_report_age_s", age < 0 ? json() : json(age)},
              {"plan", plan_json(shown_plan, shown)},  // the plan of "epoch"
              {"ranks_shown", shown},
              {"ranks", ranks}};
  if (live.owner) out["owner"] = *live.owner;  // the uid that created it (none: the admin's)
  return out;
}

int state_order(const LiveJob& live) {
  return live.finished ? 3 : live.stopped ? 2 : live.lost ? 1 : 0;
}

}  // namespace

std::vector<const LiveJob*> jobs_in_order(const JobTable& jobs) {
  std::vector<const LiveJob*> out;
  for (const auto& [id, live] : jobs.jobs()) out.push_back(live.get());
  std::stable_sort(out.begin(), out.end(), [](const LiveJob* a, const LiveJob* b) {
    return state_order(*a) < state_order(*b);
  });  // jobs() is by id already
  return out;
}

double last_efficiency(const Job& j) {
  for (auto it = j.history().rbegin(); it != j.history().rend(); ++it)
    if (it->efficiency > 0) return it->efficiency;
  return 0;
}

double last_report_age_s(const LiveJob& live) {
  if (live.last_report.time_since_epoch().count() == 0) return -1;
  return std::chrono::duration<double>(std::chrono::system_clock::now() - live.last_report).count();
}

nlohmann::json render_status(const JobTable& jobs, const Stats& st, bool with_jobs) {
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
                {"report_timeout_s", st.report_timeout_s},
                {"lost_after_s", st.lost_after_s}}},
              {"jobs", json::array()}};
  for (const char* state : {"running", "lost", "stopped"})
    out["daemon"][std::string("jobs_") + state] = jobs.in_state(state);
  out["daemon"]["jobs_finished"] = jobs.jobs().size() - jobs.running();
  out["daemon"]["retention"] = jobs.retention().to_json();
  out["quarantined"] = json::array();
  // A quarantined file's name holds its job's id: shown to the trusted viewer only.
  for (const auto& q : jobs.quarantined())
    out["quarantined"].push_back({{"job", with_jobs ? q.job : ""},
                                  {"why", with_jobs ? q.why : ""},
                                  {"path", with_jobs ? q.path : ""}});
  if (!with_jobs) {
    out.erase("jobs");
    out["hidden"] = kHiddenWhy;
    return out;
  }
  for (const LiveJob* live : jobs_in_order(jobs)) out["jobs"].push_back(job_json(*live));
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
  return chart::html_page({"dbs-scheduler", "body{margin:1em 2em;color:#222}", ""},
                          "<h1>dbs-scheduler</h1><p>" + std::to_string(jobs.running()) +
                              " jobs running, " + std::to_string(st.connections) +
                              " agent connections. " + kHiddenWhy + ".</p>");
}

}  // namespace dbs::scheduler
