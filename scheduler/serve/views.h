// What the HTTP endpoints show: /metrics (Prometheus text format 0.0.4), /status (JSON) and /
// (an HTML page with a table per job and inline-SVG charts; no network needed to view it).
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

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
};

// Per-rank rows in /status and per-rank series in /metrics stop after this many ranks of a job,
// so that a body stays within a few MB whatever the worlds (the page shows 64 rows).
inline constexpr int kRanksShown = 256;

// with_jobs false (a client neither on loopback nor holding the token): the daemon's own
// figures only, no job ids, hosts or per-job series.
std::string render_metrics(const JobTable& jobs, const Stats& stats, bool with_jobs = true);
nlohmann::json render_status(const JobTable& jobs, const Stats& stats, bool with_jobs = true);
std::string render_public_page(const JobTable& jobs, const Stats& stats);
// The page's list of jobs quarantined at restore ("" when none).
std::string render_quarantine(const JobTable& jobs);
std::string render_page(const JobTable& jobs, const Stats& stats);

}  // namespace dbs::scheduler
