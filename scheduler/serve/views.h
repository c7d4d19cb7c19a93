// What the HTTP endpoints show: /metrics (Prometheus text format 0.0.4), /status (JSON) and /
// (an HTML page with a table per job and inline-SVG charts; no network needed to view it).
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "scheduler/serve/histogram.h"
#include "scheduler/serve/jobs.h"

namespace dbs::scheduler {

struct Stats {
  double uptime_s = 0;
  std::size_t connections = 0;               // agent connections open now
  std::uint64_t messages = 0;                // agent messages received
  std::array<std::uint64_t, 12> rejected{};  // by proto::ErrorCode, time limits included
  std::uint64_t refused = 0;                 // connections refused over the limit
  std::uint64_t journal_syncs = 0;
  double report_timeout_s = 0;
  double lost_after_s = 0;
  Histogram journal_sync{journal_sync_buckets()};  // seconds per journal write + fdatasync
  Histogram plan_latency{plan_latency_buckets()};  // seconds from an epoch's last report to plan
};

// Per-rank rows in /status and per-rank series in /metrics stop after this many ranks of a job,
// so that a body stays within a few MB whatever the worlds (the page shows 64 rows).
inline constexpr int kRanksShown = 256;

// The jobs as the page and /status list them: running first, then lost, stopped, finished, each
// group by id.
std::vector<const LiveJob*> jobs_in_order(const JobTable& jobs);
// The efficiency of the last epoch every rank reported (0: none yet).
double last_efficiency(const Job& job);
// Seconds since a rank of the job last reported (negative: none since the daemon started).
double last_report_age_s(const LiveJob& live);

// with_jobs false (a client neither on loopback nor holding the token): the daemon's own
// figures only, no job ids, hosts or per-job series.
std::string render_metrics(const JobTable& jobs, const Stats& stats, bool with_jobs = true);
nlohmann::json render_status(const JobTable& jobs, const Stats& stats, bool with_jobs = true);
std::string render_public_page(const JobTable& jobs, const Stats& stats);
// The page's list of jobs quarantined at restore ("" when none).
std::string render_quarantine(const JobTable& jobs);
std::string render_page(const JobTable& jobs, const Stats& stats);

}  // namespace dbs::scheduler
