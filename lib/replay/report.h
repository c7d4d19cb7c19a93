// The --report page: one self-contained HTML file (inline SVG, no scripts, nothing fetched) with
// the summary table, epoch time against ideal per policy, each rank's throughput over the run
// and each policy's batch sizes over the run. With more than 8 ranks, per-rank charts show the
// spread instead of one line per rank: min-max and 10th-90th percentile bands and the median.
#pragma once

#include <string>

#include "lib/replay/replay.h"

namespace dbs::replay {

std::string html_report(const Replay& replay);

}  // namespace dbs::replay
