// dbs-lab balance's options, and its stand-alone rounds (balance_solo.cpp): the speed each rank
// has training alone, one rank at a time or all at once, from which the benchmark's ideals come.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "lib/comm/communicator.h"
#include "lib/data/dataset.h"
#include "lib/policy/plan.h"
#include "lib/train/trainer.h"

namespace dbs::lab {

struct BalanceOptions {
  std::string model = "cnn";       // model
  int threads = 1;                 // TBB threads per rank
  int batch = 128;                 // global batch
  int epochs = 5;                  // epochs per run
  std::size_t train_limit = 6000;  // training samples
  std::size_t test_limit = 1000;   // test samples
  int steady_from = 3;             // first epoch (1-based) of the steady state
  std::vector<std::string> runs = {"static", "dbs"};
  std::vector<std::string> disturb = {"rank=1,factor=3"};
  std::vector<std::string> quota;         // RANK=CORES: CPU quota of a rank's cgroup
  std::string wait = "auto";              // spin | sleep | auto (lib/comm/wait.h)
  std::string allreduce = "mpi";          // mpi | ring: the gradient allreduce
  double min_gain = Settings{}.min_gain;  // dbs keeps its plan below this predicted gain
  int solo_epochs = 2;                    // stand-alone epochs per rank (0 = no solo runs)
  std::size_t solo_limit = 3000;          // samples per stand-alone epoch
  bool solo_after = true;                 // stand-alone runs after the policy runs as well
  bool solo_between = true;               // and between the policy runs
  bool solo_concurrent = true;            // each round also with all ranks alone at once
  std::string trace_dir;                  // write <dir>/<run>.jsonl traces (empty = none)
  std::string data_dir = data::kDefaultDataDir;
};

// --disturb specs; "" and "none" add nothing.
std::vector<trace::Disturbance> disturbances(const BalanceOptions& o);

// The training config every run and stand-alone run starts from.
train::Config base_config(const BalanceOptions& o);

// Each rank's stand-alone samples/s, one rank at a time (the others asleep in a barrier), the same
// on every rank: rank r trains alone (a world of one, global batch B, --solo-epochs epochs of
// --solo-limit samples, its disturbances active throughout); its rate is the last epoch's samples
// / wall s.
std::vector<double> solo_rates(const BalanceOptions& o, comm::Communicator& comm,
                               const data::FashionMnist& data);

// Each rank's stand-alone samples/s with every rank training alone at the same time (each a world
// of one, no communication), the same on every rank: the speed a rank has beside the others'
// work, which on a shared host costs it some (memory bandwidth, caches, the other vCPU). Rank r
// trains --solo-limit x sequential[r] / max(sequential) samples (whole global batches, at least
// one) for --solo-epochs epochs, its rate from the last; a rank done before the others goes on
// training (one more epoch at a time) until all are done, so that every rank's last epoch ran
// beside the others' training. cover: the least, over the ranks, of the part of a rank's last
// epoch during which every other rank was between the start of its first training and the end
// of its last (1 = all of it; the short set-up between two trainings counts as training);
// fillers: the epochs each rank trained after its measured run.
std::vector<double> concurrent_rates(const BalanceOptions& o, comm::Communicator& comm,
                                     const data::FashionMnist& data,
                                     const std::vector<double>& sequential, double& cover,
                                     std::vector<int>& fillers);

}  // namespace dbs::lab
