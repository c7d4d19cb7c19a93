// render_status: /status as JSON.
#include "lib/proto/codec.h"
#include "scheduler/serve/views.h"

namespace dbs::scheduler {

nlohmann::json render_status(const JobTable& jobs, const Stats& st) {
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
  for (const auto& [id, live] : jobs.jobs()) {
    const Job& j = *live->job;
    json ranks = json::array();
    for (int r = 0; r < j.world(); ++r) {
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
                           {"plan", policy::to_json(j.current())},
                           {"ranks", ranks}});
  }
  return out;
}

}  // namespace dbs::scheduler
