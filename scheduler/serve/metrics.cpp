// render_metrics: Prometheus text exposition format 0.0.4.
#include <cstdio>

#include "lib/proto/protocol.h"
#include "scheduler/serve/views.h"

namespace dbs::scheduler {
namespace {

class Out {
 public:
  void family(const char* name, const char* type, const char* help) {
    text += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  }
  void sample(const std::string& name, const std::string& labels, double value) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", value);
    text += name;
    if (!labels.empty()) text += "{" + labels + "}";
    text += ' ';
    text += buf;
    text += '\n';
  }
  std::string text;
};

// A label value with \ " and newline escaped, as the format requires.
std::string quoted(const std::string& v) {
  std::string out = "\"";
  for (const char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string job_label(const std::string& id) {
  return "job=" + quoted(id);
}

}  // namespace

std::string render_metrics(const JobTable& jobs, const Stats& st, bool with_jobs) {
  Out o;
  o.family("dbs_up", "gauge", "1 while the daemon runs.");
  o.sample("dbs_up", "", 1);
  o.family("dbs_uptime_seconds", "gauge", "Seconds since the daemon started.");
  o.sample("dbs_uptime_seconds", "", st.uptime_s);
  o.family("dbs_jobs", "gauge", "Jobs known to the daemon, by state.");
  o.sample("dbs_jobs", "state=\"running\"", static_cast<double>(jobs.running()));
  o.sample("dbs_jobs", "state=\"finished\"",
           static_cast<double>(jobs.jobs().size() - jobs.running()));
  o.family("dbs_connections", "gauge", "Agent connections open now.");
  o.sample("dbs_connections", "", static_cast<double>(st.connections));
  o.family("dbs_messages_total", "counter", "Agent messages received.");
  o.sample("dbs_messages_total", "", static_cast<double>(st.messages));
  o.family("dbs_rejected_total", "counter",
           "Connections closed for breaking the protocol or a limit, by error code.");
  for (std::size_t c = 0; c < st.rejected.size(); ++c)
    o.sample("dbs_rejected_total",
             std::string("code=\"") + proto::name(static_cast<proto::ErrorCode>(c)) + "\"",
             static_cast<double>(st.rejected[c]));
  o.family("dbs_journal_syncs_total", "counter",
           "Journal syncs (each covers every epoch planned meanwhile).");
  o.sample("dbs_journal_syncs_total", "", static_cast<double>(st.journal_syncs));

  if (!with_jobs) return o.text;

  struct Family {
    const char* name;
    const char* type;
    const char* help;
  };
  const Family per_job[] = {
      {"dbs_job_ranks", "gauge", "Ranks of the job."},
      {"dbs_job_connected_ranks", "gauge", "Ranks connected now."},
      {"dbs_job_epoch", "gauge", "The epoch the job runs now (from 1)."},
      {"dbs_job_reports_total", "counter", "Reports planned from."},
      {"dbs_job_plans_total", "counter", "Plans made."},
      {"dbs_job_plan_changes_total", "counter", "Plans that changed the batch sizes."},
      {"dbs_job_report_timeouts_total", "counter", "Epochs planned at the report timeout."},
      {"dbs_job_efficiency", "gauge",
       "Ideal over measured epoch time of the last fully reported epoch."},
      {"dbs_job_predicted_epoch_seconds", "gauge", "Epoch time the current plan predicts."},
      {"dbs_job_ideal_epoch_seconds", "gauge", "N / sum of the ranks' throughputs."},
      {"dbs_job_finished", "gauge", "1 when every rank said goodbye."},
  };
  for (std::size_t f = 0; f < std::size(per_job); ++f) {
    o.family(per_job[f].name, per_job[f].type, per_job[f].help);
    for (const auto& [id, live] : jobs.jobs()) {
      const Job& j = *live->job;
      double efficiency = 0;
      for (auto it = j.history().rbegin(); it != j.history().rend() && efficiency == 0; ++it)
        efficiency = it->efficiency;
      const double v[] = {static_cast<double>(j.world()),
                          static_cast<double>(live->connected()),
                          static_cast<double>(j.current().epoch + 1),
                          static_cast<double>(j.reports()),
                          static_cast<double>(j.plans()),
                          static_cast<double>(j.changes()),
                          static_cast<double>(j.timeouts()),
                          efficiency,
                          j.current().predicted_epoch_s,
                          j.current().ideal_epoch_s,
                          live->finished ? 1.0 : 0.0};
      o.sample(per_job[f].name, job_label(id), v[f]);
    }
  }
  o.family("dbs_rank_throughput", "gauge", "Samples per compute second in the rank's last report.");
  for (const auto& [id, live] : jobs.jobs())
    for (const auto& r : live->job->last_reports())
      if (r.epoch >= 0 && r.rank < kRanksShown)
        o.sample("dbs_rank_throughput", job_label(id) + ",rank=\"" + std::to_string(r.rank) + "\"",
                 r.throughput());
  o.family("dbs_rank_batch", "gauge", "The rank's batch size in the current plan.");
  for (const auto& [id, live] : jobs.jobs()) {
    const auto& batch = live->job->current().batch;
    for (std::size_t r = 0; r < batch.size() && r < static_cast<std::size_t>(kRanksShown); ++r)
      o.sample("dbs_rank_batch", job_label(id) + ",rank=\"" + std::to_string(r) + "\"", batch[r]);
  }
  return o.text;
}

}  // namespace dbs::scheduler
