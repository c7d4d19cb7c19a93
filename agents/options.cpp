#include "agents/options.h"

#include <CLI/CLI.hpp>

#include "lib/common/cli.h"
#include "lib/common/error.h"
#include "lib/common/terminal.h"
#include "lib/net/address.h"

namespace dbs::agent {

bool parse_options(int argc, char** argv, Options& o, int& exit_code) {
  train::Config& c = o.train;
  CLI::App app{
      "dbs-agent: one rank of a synchronous data-parallel training job with dynamic batch sizes.\n"
      "Run one per node under mpirun or srun; a single process trains alone.\n"
      "Example: mpirun -np 2 --bind-to none dbs-agent --epochs 5 --policy dbs \\\n"
      "           --disturb rank=1,factor=3,from=2 --trace run.jsonl"};
  app.get_formatter()->column_width(34);
  cli::add_version_flag(app, "dbs-agent");
  // A later occurrence of an option overrides an earlier one, so wrapper scripts can pass
  // defaults and the user's arguments after them win. List options collect every occurrence.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  std::string scaling = "none";
  std::vector<std::string> disturb;
  bool no_progress = false, progress = false;
  app.add_option("--data", c.data_dir, "directory of the Fashion-MNIST IDX files")->capture_default_str();
  app.add_option("--model", c.model, "model: cnn (case study, 690,590 params) or lenet (small)")->capture_default_str();
  app.add_option("--epochs", c.epochs, "epochs to train")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--batch", c.global_batch, "global batch: samples per step over all ranks")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--lr", c.schedule.base_lr, "base learning rate")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--optimizer", c.optimizer, "sgd, adam or rmsprop")->capture_default_str()->check(CLI::IsMember({"sgd", "adam", "rmsprop"}));
  app.add_option("--momentum", c.optim.momentum, "SGD momentum")->capture_default_str();
  app.add_option("--weight-decay", c.optim.weight_decay, "L2 penalty")->capture_default_str();
  app.add_option("--lr-scaling", scaling, "lr scaling from --base-batch to --batch: none, linear, sqrt")->capture_default_str()->check(CLI::IsMember({"none", "constant", "linear", "sqrt"}));
  app.add_option("--base-batch", c.schedule.base_batch, "batch size --lr was tuned for")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--warmup-epochs", c.schedule.warmup_epochs, "gradual lr warmup length in epochs")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--decay-epochs", c.schedule.decay_epochs, "epochs (0-based) at whose start lr is multiplied by --decay-factor")->delimiter(',')->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--decay-factor", c.schedule.decay_factor, "step decay factor")->capture_default_str();
  app.add_option("--threads", c.threads, "TBB threads per rank (0 = all cores of the rank)")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--seed", c.seed, "seed of initialisation, shuffling and dropout")->capture_default_str();
  app.add_option("--train-limit", c.train_limit, "use the first N training samples (0 = all)")->capture_default_str();
  app.add_option("--test-limit", c.test_limit, "use the first N test samples (0 = all)")->capture_default_str();
  app.add_option("--train-subset", c.train_subset, "train only on the samples listed in this file (written by dbs-agent filter; indices after --train-limit)");
  app.add_option("--policy", c.policy, "balancing policy: dbs, static or fixed:b0,b1,...")->capture_default_str();
  app.add_option("--min-batch", c.min_batch, "smallest per-rank batch a plan may give")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--max-batch", c.max_batch, "largest per-rank batch (0 = the global batch)")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--min-gain", c.min_gain, "dbs keeps its plan below this predicted gain")->capture_default_str()->check(CLI::Range(0.0, 1.0));
  app.add_option("--rebalance-every", c.rebalance_every, "also re-plan every K steps inside an epoch (0 = per epoch)")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--disturb", disturb, "inject a slowdown: rank=R,factor=F[,from=E][,to=E][,mode=sleep|hog] (epochs from 1, fractional; repeatable)")->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--allreduce", c.allreduce, "gradient allreduce: mpi or ring")->capture_default_str()->check(CLI::IsMember({"mpi", "ring"}));
  app.add_option("--wait", c.wait, "how a rank waits for the others in collectives: spin (busy, in MPI), sleep (polls a barrier, sleeping) or auto (sleep where the cgroup has a CPU quota)")->capture_default_str()->check(CLI::IsMember({"spin", "sleep", "auto"}));
  app.add_option("--trace", c.trace_path, "write the JSONL trace here (rank 0)");
  app.add_option("--checkpoint", c.checkpoint_dir, "checkpoint into this directory after every epoch");
  app.add_flag("--resume", c.resume, "continue from the checkpoint in --checkpoint");
  app.add_option("--save-weights", c.save_weights, "write the final weights here (rank 0)");
  app.add_option("--summary", c.summary_path, "write a JSON summary here at the end (rank 0)");
  app.add_flag("--progress", progress, "a progress bar on rank 0's stdout, even when the job's output is not a terminal");
  app.add_flag("--no-progress", no_progress, "no progress bar (default: a bar when the job's output is a terminal; under mpirun, mpirun's stdout)");
  planner::DaemonOptions& sc = o.scheduler;
  app.add_option("--scheduler", sc.address, "HOST:PORT of dbs-scheduler serve; plans come from it, the embedded policy is the fallback")->envname("DBS_SCHEDULER");
  app.add_option("--token-file", sc.token_file, "the job token for --scheduler (a file only its owner may read)")->envname("DBS_TOKEN_FILE");
  app.add_option("--job", sc.job, "job id at the daemon, the same on every rank (e.g. $SLURM_JOB_ID)")->envname("DBS_JOB");
  app.add_option("--scheduler-timeout", sc.timeout_s, "seconds to wait for the daemon's plan at the end of an epoch")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--scheduler-connect-timeout", sc.connect_timeout_s, "seconds per connection attempt to the daemon")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--simd", o.simd, "fast kernels: auto (the best this CPU runs), avx2+fma or x86-64")->capture_default_str()->check(CLI::IsMember({"auto", "avx2+fma", "x86-64", "native"}));
  app.add_option("--log-level", o.log_level, "debug, info, warning or error")->capture_default_str()->check(CLI::IsMember({"debug", "info", "warning", "error"}));
  if (auto code = cli::parse(app, argc, argv, "dbs-agent")) {
    exit_code = *code;
    return false;
  }
  try {
    c.schedule.scaling = optim::parse_scaling(scaling);
    c.schedule.global_batch = c.global_batch;
    optim::validate(c.schedule);
    if (progress && no_progress) throw ConfigError("--progress and --no-progress contradict each other");
    c.progress = progress || (!no_progress && job_output_is_terminal());
    for (const auto& d : disturb) c.disturbances.push_back(train::parse_disturbance(d));
    if (c.resume && c.checkpoint_dir.empty()) throw ConfigError("--resume needs --checkpoint DIR");
    if (!sc.address.empty()) {
      net::parse_host_port(sc.address, "--scheduler");
      if (sc.job.empty()) throw ConfigError("--scheduler needs --job ID (or DBS_JOB)");
    }
  } catch (const Error& e) {
    exit_code = cli::fail("dbs-agent", e.what(), cli::usage_error);
    return false;
  }
  return true;
}

}  // namespace dbs::agent
