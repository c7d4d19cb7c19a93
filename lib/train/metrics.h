// Rank 0's --metrics file: one row per epoch and rank, appended and flushed after every epoch,
// for plotting without code. FILE.csv: a header line, then comma-separated rows; FILE.jsonl:
// one JSON object per line. Columns:
//   epoch (from 1), rank, host, batch (the rank's at the epoch's start), samples, steps,
//   compute_s, comm_s, throughput (samples / compute second), epoch_s (the epoch's wall time),
//   images_per_s (all ranks), efficiency, train_loss, test_loss, test_acc (fraction), lr (at
//   the epoch's start; with warmup or decay it changes inside the epoch), busy (the part of the
//   epoch's wall time the rank worked: gather, compute and update at its sustained rate; see
//   EpochResult::busy)
// A resumed run appends to the file: a CSV keeps the columns its header has (files written
// before the busy column stay without it) and one whose first line is no header of ours is
// refused, untouched.
#pragma once

#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "lib/policy/plan.h"
#include "lib/train/trainer.h"

namespace dbs::train::detail {

class MetricsFile {
 public:
  // append: a resumed run continues the file (a header is written only into an empty file).
  // Throws InputError when the file cannot be opened.
  MetricsFile(const std::string& path, bool append);
  // The rows of one finished epoch; reports holds every rank's.
  void write(const EpochResult& epoch, std::span<const Report> reports,
             const std::vector<std::string>& hosts, double lr);

 private:
  std::string path_;
  bool csv_;
  bool busy_ = true;  // CSV: the file has the busy column
  std::ofstream out_;
};

}  // namespace dbs::train::detail
