// Internal to lib/train: what the epoch loop, checkpoints and output share.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/comm/communicator.h"
#include "lib/data/dataset.h"
#include "lib/nn/model.h"
#include "lib/optim/optimizer.h"
#include "lib/planner/planner.h"
#include "lib/trace/trace.h"
#include "lib/train/disturb.h"
#include "lib/train/trainer.h"

namespace dbs::train::detail {

// Wall and CPU seconds of one phase of the step loop, summed over an epoch's steps.
struct Phase {
  double wall_s = 0;
  double cpu_s = 0;  // CPU of the training thread (CLOCK_THREAD_CPUTIME_ID)
};

// Where one rank's epoch went (trivially copyable: allgathered as bytes for the trace). A step
// is: gather (copy its slice of the global batch), compute (forward + backward + gradient copy
// + injected slowdown), allreduce (incl. waiting for the other ranks), update (optimizer).
struct EpochTiming {
  Phase gather, compute, allreduce, update;
  double sleep_s = 0;             // injected slowdown inside compute, wall seconds
  // gather + compute + update at the rank's sustained rate (wall, or CPU / quota where a quota
  // holds the rank below its threads), seconds: the time the epoch's work needed on this rank
  double busy_s = 0;
  double process_cpu_s = 0;       // CPU of every thread of the process over the epoch
  double wall_s = 0;              // the step loop's wall time
  std::int64_t steps = 0;
  double quota_cores = 0;         // the cgroup's CPU quota, cores (0 = none)
  std::int64_t nr_throttled = -1; // quota periods throttled during the epoch (-1 = unknown)
  double throttled_s = -1;        // time throttled during the epoch, seconds (-1 = unknown)
};

// What one rank measured in one epoch, and what all ranks computed together.
struct EpochStats {
  std::int64_t stopped_after = -1;  // steps done when the ranks agreed to stop (-1: ran to the end)
  policy::Report report;       // this rank's
  double wall_s = 0;
  double loss_sum = 0;         // over all ranks' samples
  std::int64_t samples = 0;    // over all ranks
  int replans = 0;
  // Continued from a checkpoint taken inside it: wall_s and the report hold the steps before
  // the interruption, State::timing only those after it.
  bool continued = false;
  // With rebalance_every: every rank's report over the epoch's last K steps, which the next
  // plan is made from instead of the whole-epoch reports.
  std::vector<policy::Report> plan_reports;
};

// An epoch stopped after some steps by a signal: what a checkpoint keeps to continue it.
struct Interrupted {
  std::int64_t epoch = 0;                // 0-based
  std::int64_t steps_done = 0;
  EpochStats stats;                      // this rank's figures so far (wall_s: rank 0's)
  std::vector<policy::Report> reports;   // every rank's report so far (samples, compute, comm)
};

struct State {
  const Config& config;
  comm::Communicator& comm;
  data::Dataset train;                       // the first train_limit samples, or the subset
  data::Dataset test;
  std::unique_ptr<nn::Model> model;
  std::unique_ptr<optim::Optimizer> optimizer;
  planner::Planner* planner = nullptr;       // owns the plan in force; makes every change to it
  std::unique_ptr<planner::Planner> own_planner;  // the embedded one when run() got none
  std::unique_ptr<Disturber> disturber;
  std::unique_ptr<trace::Writer> trace;      // rank 0 only
  std::vector<EpochResult> results;          // finished epochs
  std::vector<std::string> hosts;            // host of each rank
  std::vector<std::string> waiting;          // how each rank waits and why (Communicator::waiting)
  bool overlap = false;                      // Config::overlap resolved (resolve_overlap)
  nlohmann::json subset;                     // the train subset's identity (null: none)
  std::optional<Interrupted> resume_at;      // an epoch stopped mid-way, continued by run_epoch
  EpochTiming timing;                        // this rank's, of the last epoch run
  std::vector<EpochTiming> timings;          // every rank's, of the last epoch (trace_cpu)
  // With Config::update "sharded": the slices (parameter counts per rank) of the last update
  // while each rank's optimizer state is current only in its own slice; empty when every rank
  // holds the whole state.
  std::vector<std::size_t> shards;
};

// The sharded update's slices of `params` parameters: rank i's share is its share of the plan's
// batch, floor(params * (b_0 + ... + b_i) / B) minus the same up to i - 1, so a rank's part of the
// update follows its speed. Every rank computes the same counts.
std::vector<std::size_t> shard_counts(std::span<const int> batch, std::size_t params);
// The first parameter of rank's slice.
std::size_t shard_begin(std::span<const std::size_t> counts, int rank);
// Makes the whole optimizer state current on every rank (allgathers each rank's slice of every
// state vector) when it is sharded (state.shards not empty), and clears state.shards. A
// collective. Before a checkpoint and before the slices change.
void gather_optimizer_state(State& state);

// Trains one epoch under the planner's plan (which rebalance_every may change during the epoch),
// from state.resume_at's step when it holds this epoch. Stops early, after the step in which any
// rank had a stop signal (stop.h), with stopped_after set on every rank.
EpochStats run_epoch(State& state, std::int64_t epoch);

// Test loss and accuracy of the current parameters, the test set split across ranks.
std::pair<double, double> evaluate(State& state);

// Checkpoint of everything needed to continue after state.results.back(), the planner's plan
// and state included. Every rank calls it; the first rank on each host writes (the folder may
// be node-local).
// With `at`, the checkpoint of an interrupted epoch: --resume continues it from its next step.
// The optimizer state is gathered first (gather_optimizer_state), so it is whole.
void save_checkpoint(State& state, const Interrupted* at = nullptr);
struct Resumed {
  std::int64_t next_epoch = 0;  // 0-based epoch to run next (0: nothing to resume); an
                                // interrupted one is in state.resume_at
  int world = 0;                // ranks of the run that wrote the checkpoint
};
// Restores state from config.checkpoint_dir (a collective: every rank calls it). The ranks'
// copies must agree; a rank without one gets the lowest holder's. On another world size the
// parameters and optimizer state carry over and the planner's plan is re-made for the new world.
Resumed load_checkpoint(State& state);

// Writes each rank's CPU quota and throttling counters after `epoch`, and each rank's
// EpochTiming of it (a collective).
void trace_cpu(State& state, std::int64_t epoch);

// Output on rank 0.
void print_header(const State& state);
void print_epoch(const State& state, const EpochResult& r);
void write_summary(const State& state, const RunResult& result);
nlohmann::json config_json(const State& state);

// A progress bar on stdout while an epoch runs, when enabled (Config::progress, rank 0 only).
class Progress {
 public:
  Progress(bool enabled, std::int64_t epoch, std::int64_t steps);
  void update(std::int64_t step, double images_per_s);
  ~Progress();

 private:
  bool enabled_;
  std::int64_t epoch_, steps_;
  double last_ = -1;
};

}  // namespace dbs::train::detail
