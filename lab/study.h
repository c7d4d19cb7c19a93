// dbs-lab study: the training studies (the large-batch recipe, training
// on filtered data). lab/experiments/{recipe,filtering}.sh run the jobs; `study record` turns
// one job's --summary and --metrics into one JSONL record (study_record.cpp), `study report`
// reads the records back and prints the table and writes the page (study_report.cpp,
// study_page.cpp).
#pragma once

#include <string>
#include <vector>

namespace dbs::lab {

// One epoch of one run, as rank 0 measured it.
struct StudyEpoch {
  int epoch = 0;        // from 1
  double test_acc = 0;  // fraction
  double test_loss = 0;
  double train_loss = 0;  // may be NaN or inf after a divergence (written as null)
  double lr = 0;          // at the epoch's start
  double wall_s = 0;
};

// One record of the JSONL file: {"format": "dbs-study-run", "version": 1, ...}.
struct StudyRun {
  std::string study;  // "recipe" or "filtering"
  std::string data;   // "full", "filtered" or "random"
  std::string model, optimizer, lr_scaling, policy;
  double lr = 0;        // base learning rate (--lr)
  double momentum = 0;  // SGD only
  int base_batch = 0, global_batch = 0;
  double warmup_epochs = 0;
  std::vector<int> decay_epochs;  // from 1
  double decay_factor = 0;
  unsigned seed = 0;
  int ranks = 0, threads = 0;
  long long train_samples = 0;  // per epoch (after --train-limit and --train-subset)
  std::vector<StudyEpoch> epochs;
  double final_test_acc = 0;
  double wall_s = 0;  // the whole job, mpirun to exit
};

inline constexpr const char* kStudyFormat = "dbs-study-run";
inline constexpr int kStudyVersion = 1;

// A short name of a run's configuration, the same for every seed:
// "batch 8192, linear, warmup 2" or "batch 2048, filtered".
std::string config_label(const StudyRun& run);

// Reads every record of a JSONL file; throws InputError "FILE:LINE: what" on the first bad line
// (not JSON, wrong format or version, a field missing or of the wrong type or range).
std::vector<StudyRun> read_study(const std::string& path);

// One record (a JSON line, no newline) of a finished job from its --summary and --metrics and
// its dbs-agent arguments `args`, which give the schedule settings the summary lacks (checked
// against the lr the metrics recorded at every epoch's start). Throws InputError naming the file.
std::string study_record(const std::string& study, const std::string& data,
                         const std::string& summary_path, const std::string& metrics_path,
                         double wall_s, const std::vector<std::string>& args);

// The page: settings, tables and the charts (study_page.cpp).
std::string study_html(const std::vector<StudyRun>& runs, const std::string& source);

}  // namespace dbs::lab
