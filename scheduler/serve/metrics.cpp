// render_metrics: Prometheus text exposition format 0.0.4. Names carry their unit (_seconds,
// _bytes, _ratio, _total), the job is the label job_id (Prometheus sets `job` on every scraped
// target), and what a finished job shows is what ran (LiveJob::shown_plan).
#include <cstdio>

#include "lib/common/cli.h"
#include "lib/common/format.h"
#include "lib/proto/protocol.h"
#include "scheduler/serve/process.h"
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
  // name_bucket{le=...} (cumulative, +Inf last), name_sum and name_count.
  void histogram(const char* name, const char* help, const Histogram& h) {
    family(name, "histogram", help);
    const std::string n = name;
    for (std::size_t i = 0; i < h.bounds.size(); ++i)
      sample(n + "_bucket", "le=\"" + format("%g", h.bounds[i]) + "\"",
             static_cast<double>(h.counts[i]));
    sample(n + "_bucket", "le=\"+Inf\"", static_cast<double>(h.count));
    sample(n + "_sum", "", h.sum);
    sample(n + "_count", "", static_cast<double>(h.count));
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
  return "job_id=" + quoted(id);
}

std::string rank_label(const std::string& id, std::size_t rank) {
  return job_label(id) + ",rank=\"" + std::to_string(rank) + "\"";
}

void daemon_families(Out& o, const JobTable& jobs, const Stats& st) {
  const cli::BuildInfo b = cli::build_info();
  o.family("dbs_build_info", "gauge", "1, labelled with the daemon's version and build.");
  o.sample("dbs_build_info",
           "version=" + quoted(b.version) + ",revision=" + quoted(b.git) +
               ",buildtype=" + quoted(b.build_type) + ",simd=" + quoted(b.simd) + ",protocol=\"" +
               std::to_string(proto::kVersion) + "\"",
           1);
  if (const auto p = read_process_stats()) {
    o.family("process_cpu_seconds_total", "counter",
             "Total user and system CPU time spent in seconds.");
    o.sample("process_cpu_seconds_total", "", p->cpu_seconds);
    o.family("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
    o.sample("process_resident_memory_bytes", "", p->resident_bytes);
    o.family("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
    o.sample("process_virtual_memory_bytes", "", p->virtual_bytes);
    o.family("process_open_fds", "gauge", "Number of open file descriptors.");
    o.sample("process_open_fds", "", p->open_fds);
    o.family("process_max_fds", "gauge", "Maximum number of open file descriptors.");
    o.sample("process_max_fds", "", p->max_fds);
    o.family("process_start_time_seconds", "gauge",
             "Start time of the process since unix epoch in seconds.");
    o.sample("process_start_time_seconds", "", p->start_time_seconds);
  }
  o.family("dbs_uptime_seconds", "gauge", "Seconds since the daemon started.");
  o.sample("dbs_uptime_seconds", "", st.uptime_s);
  o.family("dbs_jobs", "gauge",
           "Jobs known to the daemon, by state (running, lost, stopped, finished).");
  for (const char* state : {"running", "lost", "stopped", "finished"})
    o.sample("dbs_jobs", std::string("state=\"") + state + "\"",
             static_cast<double>(jobs.in_state(state)));
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
  o.histogram("dbs_journal_sync_seconds", "Seconds per journal write and fdatasync.",
              st.journal_sync);
  o.histogram("dbs_plan_latency_seconds",
              "Seconds from the report that completed an epoch (or its report timeout) to its "
              "plan being sent: planning and the journal sync.",
              st.plan_latency);
}

}  // namespace

std::string render_metrics(const JobTable& jobs, const Stats& st, bool with_jobs) {
  Out o;
  daemon_families(o, jobs, st);
  if (!with_jobs) return o.text;

  struct Family {
    const char* name;
    const char* type;
    const char* help;
  };
  const Family per_job[] = {
      {"dbs_job_ranks", "gauge", "Ranks of the job."},
      {"dbs_job_connected_ranks", "gauge", "Ranks connected now."},
      {"dbs_job_epoch", "gauge",
       "The epoch the job runs now (from 1); for a finished job the last epoch it ran."},
      {"dbs_job_reports_total", "counter", "Reports planned from."},
      {"dbs_job_plans_total", "counter", "Plans made."},
      {"dbs_job_plan_changes_total", "counter", "Plans that changed the batch sizes."},
      {"dbs_job_report_timeouts_total", "counter", "Epochs planned at the report timeout."},
      {"dbs_job_efficiency_ratio", "gauge",
       "Ideal over measured epoch time of the last fully reported epoch."},
      {"dbs_job_predicted_epoch_seconds", "gauge",
       "Epoch time the plan of the epoch shown in dbs_job_epoch predicts."},
      {"dbs_job_ideal_epoch_seconds", "gauge",
       "N / sum of the ranks' throughputs, for the epoch shown in dbs_job_epoch."},
      {"dbs_job_last_report_timestamp_seconds", "gauge",
       "When a rank of the job last reported, seconds since the Unix epoch (0: not since the "
       "daemon started)."},
  };
  for (std::size_t f = 0; f < std::size(per_job); ++f) {
    o.family(per_job[f].name, per_job[f].type, per_job[f].help);
    for (const auto& [id, live] : jobs.jobs()) {
      const Job& j = *live->job;
      const Plan& shown = live->shown_plan();
      const double last_report =
          live->last_report.time_since_epoch().count() == 0
              ? 0
              : std::chrono::duration<double>(live->last_report.time_since_epoch()).count();
      const double v[] = {static_cast<double>(j.world()),
                          static_cast<double>(live->connected()),
                          static_cast<double>(live->shown_epoch()),
                          static_cast<double>(j.reports()),
                          static_cast<double>(j.plans()),
                          static_cast<double>(j.changes()),
                          static_cast<double>(j.timeouts()),
                          last_efficiency(j),
                          shown.predicted_epoch_s,
                          shown.ideal_epoch_s,
                          last_report};
      o.sample(per_job[f].name, job_label(id), v[f]);
    }
  }
  o.family("dbs_job_state", "gauge",
           "1 for the job's state (running, lost, stopped or finished), else 0.");
  for (const auto& [id, live] : jobs.jobs())
    for (const char* state : {"running", "lost", "stopped", "finished"})
      o.sample("dbs_job_state", job_label(id) + ",state=\"" + state + "\"",
               std::string(live->state()) == state ? 1.0 : 0.0);
  o.family("dbs_rank_info", "gauge",
           "1, labelled with what the rank said when it registered: its host and how it waits in "
           "collectives and why.");
  for (const auto& [id, live] : jobs.jobs()) {
    const auto& info = live->job->rank_info();
    for (std::size_t r = 0; r < info.size() && r < static_cast<std::size_t>(kRanksShown); ++r)
      if (!info[r].host.empty() || !info[r].waiting.empty())  // registered, or restored
        o.sample("dbs_rank_info",
                 rank_label(id, r) + ",host=" + quoted(info[r].host) +
                     ",waiting=" + quoted(info[r].waiting),
                 1);
  }
  o.family("dbs_rank_throughput_samples_per_second", "gauge",
           "Samples per compute second in the rank's last report.");
  for (const auto& [id, live] : jobs.jobs())
    for (const auto& r : live->job->last_reports())
      if (r.epoch >= 0 && r.rank < kRanksShown)
        o.sample("dbs_rank_throughput_samples_per_second",
                 rank_label(id, static_cast<std::size_t>(r.rank)), r.throughput());
  o.family("dbs_rank_batch", "gauge",
           "The rank's batch size (samples per step) in the epoch shown in dbs_job_epoch.");
  for (const auto& [id, live] : jobs.jobs()) {
    const auto& batch = live->shown_plan().batch;
    for (std::size_t r = 0; r < batch.size() && r < static_cast<std::size_t>(kRanksShown); ++r)
      o.sample("dbs_rank_batch", rank_label(id, r), batch[r]);
  }
  return o.text;
}

}  // namespace dbs::scheduler
