// The synchronous data-parallel training loop (docs/concepts/architecture.md, "One epoch"): one
// permutation per epoch shared by all ranks, each global step split into per-rank slices by the
// plan, gradient sums allreduced together with the sample count, the same update on every rank, and
// a new plan from the planner at the end of every epoch (and every K steps with rebalance_every).
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lib/comm/communicator.h"
#include "lib/common/cpu_quota.h"
#include "lib/data/dataset.h"
#include "lib/data/sampler.h"
#include "lib/nn/model.h"
#include "lib/optim/optimizer.h"
#include "lib/planner/planner.h"
#include "lib/planner/remote.h"
#include "lib/trace/records.h"
#include "lib/trace/trace.h"
#include "lib/train/config.h"
#include "lib/train/disturb.h"
#include "lib/train/epoch.h"
#include "lib/train/exchange.h"
#include "lib/train/local_sgd.h"

namespace dbs::train {

struct EpochResult {
  std::int64_t epoch = 0;
  double wall_s = 0;        // training time of the epoch (no evaluation)
  double images_per_s = 0;  // N / wall_s
  double ideal_s = 0;       // N / sum of the ranks' throughputs
  double efficiency = 0;    // ideal_s / wall_s
  double train_loss = 0;    // mean over the epoch's samples
  double test_loss = 0;
  double test_acc = 0;             // fraction in [0, 1]
  std::vector<int> batch;          // per rank, at the start of the epoch
  std::vector<double> throughput;  // per rank, samples / compute second
  int replans = 0;                 // plan changes inside the epoch (rebalance_every)
  int averages = 0;  // model averages in the epoch (0: synchronous; Settings::average_every)
  // Per rank, the fraction of wall_s it worked: gather + compute + update at its sustained rate
  // (SustainedTime where a quota holds it back). Empty for an epoch read from a checkpoint, and
  // for one continued from a checkpoint taken inside it (its timings miss the earlier steps).
  std::vector<double> busy;
  // N / sum over ranks of samples_r / busy_r seconds: the epoch had every rank worked all of it
  // at the rate it had in this epoch, i.e. the best split for these speeds (0 = unknown).
  double busy_ideal_s = 0;
  // Rank 0's control plane at the epoch's end (absent for an epoch read from a checkpoint).
  std::optional<trace::Control> control;
};

struct RunResult {
  std::vector<EpochResult> epochs;  // every epoch, resumed ones included
  double test_loss = 0;
  double test_acc = 0;
  double param_l2 = 0;
  double param_sum = 0;
  std::vector<float> params;  // final parameters
  // A stop signal (stop.h) ended the run early: the signal, and where it stopped: epoch
  // stop_epoch (from 1) after stop_step of its steps (0: at its start, the epochs before it done).
  int stop_signal = 0;
  std::int64_t stop_epoch = 0, stop_step = 0;
};

// The checks run() makes of a config for `world` ranks and n_train training samples before it
// trains; throws ConfigError naming the option at fault. For callers that check up front.
void validate(const Config& config, int world, std::size_t n_train);

// One rank's training run: it owns the data, the model, the optimizer, the planner (unless one
// is given), the gradient exchange and the trace, and runs the epochs. Every rank of the job
// makes one with the same config; run() is a collective from start to end.
class Trainer {
 public:
  // data is the full data set (every rank loads it; the plan decides which samples a rank
  // computes); pass it moved to save a copy. A data set without test samples is not evaluated:
  // its epochs have no losses or accuracy (NaN here, absent from the trace). planner makes every
  // plan (nullptr: an embedded one of config.policy); it must be fresh, or restored by a resume.
  // model is the model to train, for data's input shape (nullptr: nn::make_model of
  // config.model). Throws ConfigError for a config validate() rejects.
  Trainer(const Config& config, comm::Communicator& comm, data::FashionMnist data,
          Planner* planner = nullptr, std::unique_ptr<nn::Model> model = nullptr);
  // Trains (from the checkpoint with Config::resume) to Config::epochs. Stops early when any
  // rank gets SIGINT/SIGTERM (stop.h), after a checkpoint when configured. Throws on any error;
  // the caller aborts the job.
  RunResult run();

 private:
  // What the checkpoint restored.
  struct Resumed {
    std::int64_t next_epoch = 0;  // 0-based epoch to run next (0: nothing to resume); an
                                  // interrupted one is in resume_at_
    int world = 0;                // ranks of the run that wrote the checkpoint
  };

  // trainer.cpp
  void apply_subset();
  void open_trace(const Resumed& resumed);
  detail::EpochParts epoch_parts();
  // The result of a finished epoch from its figures and every rank's report.
  EpochResult result_of(std::int64_t epoch, const detail::EpochStats& es,
                        std::span<const Report> reports, std::pair<double, double> test,
                        std::vector<int> batch) const;
  void trace_epoch(const EpochResult& r, std::span<const Report> reports, const Planned& next);
  detail::Interrupted interrupted(std::int64_t epoch, const detail::EpochStats& es);
  // Test loss and accuracy (NaN without test samples) (a collective where there are some).
  std::pair<double, double> evaluate();
  RunResult finish(RunResult out);

  // checkpoint.cpp: the checkpoint of everything needed to continue after results_.back(), the
  // planner's plan and state included; with `at`, of an interrupted epoch, which --resume
  // continues from its next step. Every rank calls it (the optimizer state is gathered first);
  // the first rank on each host writes (the folder may be node-local).
  void save_checkpoint(const detail::Interrupted* at = nullptr);
  // Restores from config_.checkpoint_dir (a collective). The ranks' copies must agree; a rank
  // without one gets the lowest holder's. On another world size the parameters and optimizer
  // state carry over and the planner's plan is re-made for the new world.
  Resumed load_checkpoint();
  // Whether the ranks' optimizer states differ (model averaging with each rank's own), so that
  // a checkpoint keeps every rank's.
  bool own_optimizer_states() const;

  // cpu_trace.cpp: allgathers every rank's report, timing (into timings_), CPU quota, check and
  // share of the daemon's plan of `epoch` at once, and writes their timing and cpu records (a
  // collective). The check is this rank's fingerprint of the plan that ran and the parameters,
  // and whether it has had a stop signal: throws CheckError where the fingerprints differ, or
  // where some ranks carry a share and others not. Returns the reports in rank order, whether
  // any rank has had a stop signal (the same on every rank) and the shares.
  struct Ending {
    const Report& report;
    std::uint64_t fingerprint = 0;
    double ended_s = 0;             // when this rank reached the epoch's end, wall clock seconds
    std::optional<CpuQuota> quota;  // its CPU quota then (read_cpu_quota)
    const std::array<std::byte, planner::kShareBytes>* share = nullptr;  // none: no SharesAhead
  };
  struct Gathered {
    std::vector<Report> reports;
    bool stop = false;
    double waited_s = 0;            // from this rank's end of the steps to the last rank's
    std::vector<std::byte> shares;  // every rank's share in rank order; empty: none carried
  };
  Gathered gather_epoch(std::int64_t epoch, const Ending& mine);

  // output.cpp, rank 0's output.
  void print_header() const;
  void print_epoch(const EpochResult& r) const;
  void write_summary(const RunResult& result) const;
  nlohmann::json config_json() const;

  const Config& config_;
  comm::Communicator& comm_;
  data::Dataset train_;  // the first train_limit samples, or the subset
  data::Dataset test_;
  std::unique_ptr<data::PermutationsAhead> orders_;  // train_'s epoch permutations
  nlohmann::json subset_;                            // the train subset's identity (null: none)
  std::unique_ptr<nn::Model> model_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  std::unique_ptr<Planner> own_planner_;  // the embedded one when none was given
  Planner* planner_ = nullptr;            // owns the plan in force; makes every change to it
  std::vector<std::string> hosts_;        // host of each rank
  std::vector<std::string> waiting_;      // how each rank waits and why (Communicator::waiting)
  bool overlap_ = false;                  // Config::overlap resolved (resolve_overlap)
  std::unique_ptr<Exchange> exchange_;
  std::unique_ptr<LocalSgd> local_;           // with Config::average_every only
  std::unique_ptr<Exchange> local_exchange_;  // the averaging epochs' compute, with overlap_ only
  std::unique_ptr<Disturber> disturber_;
  std::unique_ptr<trace::Writer> trace_;          // rank 0 only
  std::vector<EpochResult> results_;              // finished epochs
  std::optional<detail::Interrupted> resume_at_;  // an epoch stopped mid-way, to continue
  trace::Timing timing_;                          // this rank's, of the last epoch run
  std::vector<trace::Timing> timings_;            // every rank's, of the last epoch
};

// Trainer(config, comm, data, planner, model).run().
RunResult run(const Config& config, comm::Communicator& comm, data::FashionMnist data,
              Planner* planner = nullptr, std::unique_ptr<nn::Model> model = nullptr);

}  // namespace dbs::train
