// Configuration of a training run: one struct, filled once by the agent's option parser.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "lib/optim/optimizer.h"
#include "lib/optim/schedule.h"
#include "lib/policy/plan.h"
#include "lib/trace/disturbance.h"

namespace dbs::train {

// The policy settings are the base (samples_per_epoch is filled in by settings_of).
struct Config : Settings {
  std::string data_dir = "/usr/share/datasets/fashion-mnist";  // Fashion-MNIST IDX files
  std::string model = "cnn";                                   // cnn | lenet
  int epochs = 5;                  // epochs to train (in total, counting resumed ones)
  std::string optimizer = "adam";  // sgd | adam | rmsprop
  optim::OptimizerConfig optim;    // momentum, betas, ...
  optim::ScheduleConfig schedule;  // lr, scaling, warmup, decay (at Settings::global_batch)
  int threads = 0;                 // TBB threads per rank (0 = all available)
  std::uint64_t seed = 1;          // model init, shuffling, dropout
  std::size_t train_limit = 0;     // use the first N training samples (0 = all)
  std::size_t test_limit = 0;      // use the first N test samples (0 = all)
  std::string train_subset;        // train on the samples of this subset file (indices
                                   // into the set after train_limit); empty = all
  std::vector<trace::Disturbance> disturbances;
  std::string trace_path;             // JSONL trace (rank 0 writes it); empty = none
  std::string checkpoint_dir;         // checkpoint each epoch there; empty = none
  bool resume = false;                // continue from checkpoint_dir
  std::string save_weights;           // final weights file; empty = none
  std::string summary_path;           // final JSON summary; empty = none
  std::string metrics_path;           // per-epoch, per-rank rows (.csv or .jsonl); empty = none
  bool progress = false;              // progress bar on rank 0's stdout (the agent turns it on
                                      // when the job's output is a terminal)
  bool table = true;                  // rank 0 prints the run header and a row per epoch
  std::string allreduce = "mpi";      // recorded in the trace
  std::string update = "replicated";  // optimizer update: replicated (every rank updates every
                                      // parameter) | sharded (each rank its plan's slice)
  // Exchange the gradient in buckets during the backward pass (non-blocking MPI allreduce,
  // replicated update only): on | off | auto. auto: on where the ranks are on more than one host
  // (the exchange crosses a network, whose transfer time the backward pass can hide), off on one
  // host (over shared memory the exchange is short and there is little to hide) and where the
  // exchange cannot overlap (--update sharded, --allreduce ring). See resolve_overlap.
  std::string overlap = "auto";
  std::string wait = "auto";  // how ranks wait in collectives: spin | sleep | auto
                              // (lib/comm/wait.h); recorded in the trace
  // Under model averaging (Settings::average_every > 0, lib/train/local_sgd.h): local (each
  // rank keeps its own optimizer state) | mean (averaged with the parameters).
  std::string average_optimizer = "local";
  nlohmann::json synthetic;  // the cluster spec of --model synthetic as given,
                             // recorded in the trace header and the checkpoint's
                             // identity (null: a real model)
};

// The policy settings of a run on a training set of `train_samples` samples before
// --train-limit: what the trainer's policy gets, and what a planner running the same policy
// beside it (the daemon client) must use.
Settings settings_of(const Config& config, std::size_t train_samples);

// Throws ConfigError for an unknown update, overlap or averaging mode, or a combination the
// exchange cannot run: --overlap on with --update sharded or --allreduce ring; model averaging
// (average_every > 0) with --update sharded (a local step needs the whole optimizer state on
// every rank), --overlap on (a local step exchanges no gradient to overlap) or a rebalance_every
// that is not a multiple of average_every (the ranks learn each other's step times at the
// averages); the averaging options without average_every. The agent checks it before MPI
// starts.
void check_exchange(const Config& config);

// Whether the run overlaps the exchange with the backward pass: Config::overlap, with auto
// resolved from the ranks' hosts (off under model averaging) (one per rank, the same on every rank,
// so every rank decides alike: the collectives differ).
bool resolve_overlap(const Config& config, std::span<const std::string> hosts);

}  // namespace dbs::train
