// Runs of a study grouped by configuration (every setting but the seed), for the tables and the
// page.
#pragma once

#include <string>
#include <vector>

#include "lab/study.h"

namespace dbs::lab {

struct Group {
  std::string label;                  // config_label of its runs
  std::vector<const StudyRun*> runs;  // in seed order
};

// Groups in study order: batch ascending; data full, filtered, random; scaling none before the
// others; warmup ascending. Runs of one label must agree on every setting but the seed (else
// InputError naming both seeds).
std::vector<Group> group_runs(const std::vector<StudyRun>& runs);

struct Stats {
  double mean = 0, min = 0, max = 0;
};

// Over the group's runs: the final test accuracy (fraction).
Stats final_stats(const Group& g);

// The same over the runs' test accuracy after `epoch` (from 1), for the runs that reached it.
Stats epoch_stats(const Group& g, int epoch);

// The learning rate after warmup, before any decay: lr x the scaling factor.
double peak_lr(const StudyRun& run);

}  // namespace dbs::lab
