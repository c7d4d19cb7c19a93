// Rank 0's --metrics file: one row per epoch and rank, appended and flushed after every epoch,
// for plotting without code. FILE.csv: a header line, then comma-separated rows; FILE.jsonl:
// one JSON object per line. Columns:
//   epoch (from 1), rank, host, batch (the rank's at the epoch's start), samples, steps,
//   compute_s, comm_s, throughput (samples / compute second), epoch_s (the epoch's wall time),
//   images_per_s (all ranks), efficiency, train_loss, test_loss, test_acc (fraction), lr (at
//   the epoch's start; with warmup or decay it changes inside the epoch)
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
  void write(const EpochResult& epoch, std::span<const policy::Report> reports,
             const std::vector<std::string>& hosts, double lr);

 private:
  std::string path_;
  bool csv_;
  std::ofstream out_;
};

}  // namespace dbs::train::detail
