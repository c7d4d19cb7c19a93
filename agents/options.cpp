#include "agents/options.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "agents/cluster.h"
#include "lib/comm/mpi.h"
#include "lib/common/cli.h"
#include "lib/common/error.h"
#include "lib/common/terminal.h"
#include "lib/nn/model.h"
#include "lib/planner/remote_check.h"
#include "lib/policy/policy.h"

namespace dbs::agent {
namespace {

namespace fs = std::filesystem;

// dir exists (created like mkdir -p) and is writable, before MPI starts: a bad path fails
// now, not after the training run.
void prepare_folder(const std::string& dir, const char* option, const std::string& path) {
  const std::string where = dir.empty() ? "." : dir;
  std::error_code ec;
  fs::create_directories(where, ec);
  if (ec)
    throw ConfigError(std::string(option) + " " + path + ": cannot create folder " + where + ": " +
                      ec.message());
  if (::access(where.c_str(), W_OK | X_OK) != 0)
    throw ConfigError(std::string(option) + " " + path + ": folder " + where + " is not writable");
}

// The same for the folder of an output file.
void prepare_file(const std::string& path, const char* option) {
  if (path.empty()) return;
  if (fs::is_directory(path))
    throw ConfigError(std::string(option) + " " + path + ": is a folder, not a file");
  prepare_folder(fs::path(path).parent_path().string(), option, path);
}

// A thread or CPU count from the environment (0: unset); throws ConfigError naming the variable.
int threads_from_env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return 0;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end != '\0' || n < 1 || n > 4096)
    throw ConfigError(std::string(name) + "=" + v + ": expected a count from 1 to 4096");
  return static_cast<int>(n);
}

// The policy fits the job: fixed: sizes for its ranks, --min-batch and --max-batch a global
// batch they can make; fails before MPI starts. World: the launcher's, or the number of fixed:
// sizes, or 1.
void check_policy(const train::Config& c) {
  int world = comm::launched_world_size();
  if (world == 0 && c.policy.kind == PolicySpec::Kind::fixed)
    world = static_cast<int>(c.policy.sizes.size());
  try {
    policy::make_policy(train::settings_of(c, 1), std::max(world, 1));
  } catch (const ConfigError& e) {
    throw ConfigError("--policy " + to_string(c.policy) + " (" +
                      std::to_string(std::max(world, 1)) + " rank(s)): " + e.what());
  }
}

}  // namespace

bool parse_options(int argc, char** argv, Options& o, int& exit_code) {
  train::Config& c = o.train;
  CLI::App app{
      "dbs-agent: one rank of a synchronous data-parallel training job with dynamic batch sizes.\n"
      "Run one per node under mpirun or srun; a single process trains alone. Ctrl-C or SIGTERM\n"
      "stops after the current step with a checkpoint (--checkpoint), summary and trace, exit\n"
      "130/143; a second signal stops at once.\n"
      "Example: mpirun --allow-run-as-root -np 2 --bind-to none dbs-agent --epochs 5 \\\n"
      "           --policy dbs --disturb rank=1,factor=3,from=2 --trace out/trace.jsonl"};
  app.get_formatter()->column_width(34);
  cli::add_version_flag(app, "dbs-agent");
  // A later occurrence of an option overrides an earlier one, so wrapper scripts can pass
  // defaults and the user's arguments after them win. List options collect every occurrence.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  std::string scaling = "none", auth = "auto", policy = "dbs";
  std::vector<std::string> disturb;
  bool no_progress = false, progress = false;
  using cli::above, cli::at_least, cli::between;

  const char* const data = "Data";
  app.add_option("--data", c.data_dir, "directory of the Fashion-MNIST IDX files")
      ->capture_default_str()
      ->group(data);
  app.add_option("--train-limit", c.train_limit, "use the first N training samples (0 = all)")
      ->capture_default_str()
      ->check(at_least(0))
      ->group(data);
  app.add_option("--test-limit", c.test_limit, "use the first N test samples (0 = all)")
      ->capture_default_str()
      ->check(at_least(0))
      ->group(data);
  app.add_option("--train-subset", c.train_subset,
                 "train only on the samples listed in this file (written by dbs-agent filter; "
                 "indices after --train-limit)")
      ->group(data);

  const char* const model = "Model and optimisation";
  std::vector<std::string> models = nn::model_names();
  models.push_back("synthetic");
  app.add_option("--model", c.model,
                 "model: cnn (case study, 690,590 params), lenet (small) or synthetic (an emulated "
                 "cluster: every rank waits the step cost --cluster gives it; no data is read)")
      ->capture_default_str()
      ->check(CLI::IsMember(models))
      ->group(model);
  app.add_option("--cluster", o.cluster_path,
                 "the cluster spec --model synthetic emulates (the format of replay --synthesize); "
                 "its epochs, samples, batch, policy and disturbances apply unless given here, and "
                 "contradicting them is an error")
      ->group(model);
  app.add_option("--epochs", c.epochs, "epochs to train (in total, resumed ones included)")
      ->capture_default_str()
      ->check(between(1, 1000000))
      ->group(model);
  app.add_option("--batch", c.global_batch, "global batch: samples per step over all ranks")
      ->capture_default_str()
      ->check(at_least(1))
      ->group(model);
  app.add_option("--optimizer", c.optimizer, "sgd, adam or rmsprop")
      ->capture_default_str()
      ->check(CLI::IsMember({"sgd", "adam", "rmsprop"}))
      ->group(model);
  app.add_option("--lr", c.schedule.base_lr, "base learning rate")
      ->capture_default_str()
      ->check(above(0))
      ->group(model);
  app.add_option("--momentum", c.optim.momentum, "SGD momentum")
      ->capture_default_str()
      ->check(between(0, 0.999999))
      ->group(model);
  app.add_option("--weight-decay", c.optim.weight_decay, "L2 penalty")
      ->capture_default_str()
      ->check(at_least(0))
      ->group(model);
  app.add_option("--lr-scaling", scaling,
                 "lr scaling from --base-batch to --batch: none (= constant), linear or sqrt")
      ->capture_default_str()
      ->check(CLI::IsMember({"none", "constant", "linear", "sqrt"}))
      ->group(model);
  app.add_option("--base-batch", c.schedule.base_batch, "batch size --lr was tuned for")
      ->capture_default_str()
      ->check(at_least(1))
      ->group(model);
  app.add_option("--warmup-epochs", c.schedule.warmup_epochs, "gradual lr warmup length in epochs")
      ->capture_default_str()
      ->check(at_least(0))
      ->group(model);
  app.add_option("--decay-epochs", c.schedule.decay_epochs,
                 "epochs (from 1) at whose start lr is multiplied by --decay-factor, e.g. 30,60")
      ->delimiter(',')
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(at_least(1))
      ->group(model);
  app.add_option("--decay-factor", c.schedule.decay_factor, "step decay factor")
      ->capture_default_str()
      ->check(above(0))
      ->group(model);
  app.add_option("--seed", c.seed, "seed of initialisation, shuffling and dropout")
      ->capture_default_str()
      ->group(model);

  const char* const balance = "Balance";
  app.add_option("--policy", policy,
                 "balancing policy: dbs (per-rank cost model alpha + beta b fitted from step "
                 "times, water-filled, with hysteresis), dbs-rate (batch in proportion to measured "
                 "speed), static or fixed:b0,b1,...")
      ->capture_default_str()
      ->group(balance);
  app.add_option("--min-batch", c.min_batch, "smallest per-rank batch a plan may give")
      ->capture_default_str()
      ->check(at_least(1))
      ->group(balance);
  app.add_option("--max-batch", c.max_batch, "largest per-rank batch (0 = the global batch)")
      ->capture_default_str()
      ->check(at_least(0))
      ->group(balance);
  app.add_option("--min-gain", c.min_gain,
                 "dbs keeps its plan below this predicted gain (fraction)")
      ->capture_default_str()
      ->check(between(0, 0.999999))
      ->group(balance);
  app.add_option("--rebalance-every", c.rebalance_every,
                 "also re-plan every K steps inside an epoch (0 = per epoch)")
      ->capture_default_str()
      ->check(at_least(0))
      ->group(balance);
  app.add_option("--disturb", disturb,
                 "inject a slowdown: rank=R,factor=F[,from=E][,to=E][,mode=sleep|hog] (epochs from "
                 "1, fractional; repeatable)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->group(balance);
  app.add_option("--allreduce", c.allreduce, "gradient allreduce: mpi or ring")
      ->capture_default_str()
      ->check(CLI::IsMember({"mpi", "ring"}))
      ->group(balance);
  app.add_option("--update", c.update,
                 "optimizer update: replicated (every rank updates every parameter) or sharded "
                 "(each rank updates a slice in proportion to its batch; the gradient is "
                 "reduce-scattered and the parameters allgathered)")
      ->capture_default_str()
      ->check(CLI::IsMember({"replicated", "sharded"}))
      ->group(balance);
  // Default auto (Config::overlap): on where the ranks are on more than one host.
  CLI::Option* overlap =
      app.add_flag_callback(
             "--overlap", [&c] { c.overlap = "on"; },
             "exchange the gradient in buckets during the backward pass, last layers first "
             "(non-blocking MPI allreduce; with --update replicated and --allreduce mpi). Default: "
             "where the ranks are on more than one host")
          ->disable_flag_override()
          ->group(balance);
  app.add_flag_callback(
         "--no-overlap", [&c] { c.overlap = "off"; },
         "do not overlap the exchange, also across hosts")
      ->excludes(overlap)
      ->disable_flag_override()
      ->group(balance);
  app.add_option("--average-every", c.average_every,
                 "local SGD: each rank steps its own model on its batch, and the models are "
                 "averaged, weighted by the samples each rank trained, every H steps and at each "
                 "epoch's end (default: the gradient exchanged every step)")
      ->check(at_least(1))
      ->group(balance);
  app.add_option(
         "--average-after-epochs", c.average_after_epochs,
         "with --average-every: train the first E epochs synchronously, then average every H steps")
      ->capture_default_str()
      ->check(at_least(0))
      ->group(balance);
  app.add_option("--average-optimizer", c.average_optimizer,
                 "with --average-every: the optimizer state stays each rank's own (local) or is "
                 "averaged with the model (mean)")
      ->capture_default_str()
      ->check(CLI::IsMember({"local", "mean"}))
      ->group(balance);
  app.add_option("--wait", c.wait,
                 "how a rank waits for the others in collectives: spin (busy, in MPI), sleep "
                 "(polls a barrier, sleeping) or auto (sleep where the cgroup has a CPU quota)")
      ->capture_default_str()
      ->check(CLI::IsMember({"spin", "sleep", "auto"}))
      ->group(balance);

  const char* const daemon = "Scheduler daemon";
  Remote& sc = o.scheduler;
  app.add_option("--scheduler", sc.address,
                 "HOST:PORT of dbs-scheduler serve; plans come from it, the embedded policy is the "
                 "fallback")
      ->envname("DBS_SCHEDULER")
      ->group(daemon);
  app.add_option("--token-file", sc.token_file,
                 "the job's key for --scheduler (a file only its owner may read)")
      ->envname("DBS_TOKEN_FILE")
      ->group(daemon);
  app.add_option("--auth", auth,
                 "how the ranks prove who they are to --scheduler: token (--token-file), munge (a "
                 "munge credential of the user) or auto (the token file when given, else munge "
                 "when munged answers)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "token", "munge"}))
      ->group(daemon);
  app.add_option(
         "--munge-socket", sc.munge_socket,
         "munged's socket for --auth munge (default: munge's own, /run/munge/munge.socket.2)")
      ->envname("MUNGE_SOCKET")
      ->group(daemon);
  app.add_option("--tls-ca", sc.tls_ca,
                 "PEM CA certificate: speak TLS to --scheduler and verify its certificate against "
                 "this CA and the HOST of --scheduler (default: plain TCP)")
      ->envname("DBS_TLS_CA")
      ->group(daemon);
  app.add_option("--job", sc.job,
                 "job id at the daemon, the same on every rank (e.g. $SLURM_JOB_ID)")
      ->envname("DBS_JOB")
      ->group(daemon);
  app.add_option("--scheduler-timeout", sc.timeout_s,
                 "seconds to wait for the daemon's plan at the end of an epoch")
      ->capture_default_str()
      ->check(above(0))
      ->group(daemon);
  app.add_option("--scheduler-connect-timeout", sc.connect_timeout_s,
                 "seconds per connection attempt to the daemon, TLS handshake included")
      ->capture_default_str()
      ->check(above(0))
      ->group(daemon);

  const char* const output = "Output";
  app.add_option("--summary", c.summary_path, "write a JSON summary here at the end (rank 0)")
      ->group(output);
  app.add_option("--trace", c.trace_path, "write the JSONL trace here (rank 0)")->group(output);
  app.add_option("--metrics", c.metrics_path,
                 "one row per epoch and rank, flushed every epoch (rank 0): FILE.csv or FILE.jsonl")
      ->group(output);
  app.add_option("--save-weights", c.save_weights, "write the final weights here (rank 0)")
      ->group(output);
  app.add_flag("--progress", progress,
               "a progress bar on rank 0's stdout, even when the job's output is not a terminal")
      ->group(output);
  app.add_flag("--no-progress", no_progress,
               "no progress bar (default: a bar when the job's output is a terminal; under mpirun, "
               "mpirun's stdout)")
      ->group(output);
  app.add_option("--log-level", o.log_level, "debug, info, warning or error")
      ->capture_default_str()
      ->check(CLI::IsMember({"debug", "info", "warning", "error"}))
      ->group(output);

  const char* const ckpt = "Checkpoint";
  app.add_option("--checkpoint", c.checkpoint_dir,
                 "checkpoint into this directory after every epoch and on Ctrl-C/SIGTERM")
      ->group(ckpt);
  app.add_flag("--resume", c.resume,
               "continue from the checkpoint in --checkpoint (none there: start afresh)")
      ->group(ckpt);

  const char* const perf = "Performance";
  app.add_option(
         "--threads", c.threads,
         "TBB threads per rank (default: SLURM_CPUS_PER_TASK, else OMP_NUM_THREADS, else the CPUs "
         "the launcher bound the rank to, else the node's CPUs in a Slurm job (SLURM_CPUS_ON_NODE) "
         "or the host's cores, shared among the ranks on it; 0 = all cores of the rank)")
      ->check(between(0, 4096))
      ->group(perf);
  app.add_option("--simd", o.simd,
                 "fast kernels: auto (the best this CPU runs), avx2+fma or x86-64")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "avx2+fma", "x86-64", "native"}))
      ->group(perf);
  if (auto code = cli::parse(app, argc, argv, "dbs-agent")) {
    exit_code = *code;
    return false;
  }
  try {
    if (app.count("--threads") > 0) {
      o.threads_from = "--threads";
    } else if ((c.threads = threads_from_env("SLURM_CPUS_PER_TASK")) > 0) {
      o.threads_from = "SLURM_CPUS_PER_TASK";
    } else if ((c.threads = threads_from_env("OMP_NUM_THREADS")) > 0) {
      o.threads_from = "OMP_NUM_THREADS";
    } else {
      o.node_cpus = threads_from_env("SLURM_CPUS_ON_NODE");
    }
    try {
      c.policy = parse_policy(policy);
    } catch (const ConfigError& e) {
      throw ConfigError(std::string("--policy: ") + e.what());
    }
    c.schedule.scaling = optim::parse_scaling(scaling);
    optim::validate(c.schedule, c.global_batch);
    if (progress && no_progress)
      throw ConfigError("--progress and --no-progress contradict each other");
    c.progress = progress || (!no_progress && job_output_is_terminal());
    for (const auto& d : disturb) c.disturbances.push_back(trace::parse_disturbance(d));
    if (c.resume && c.checkpoint_dir.empty()) throw ConfigError("--resume needs --checkpoint DIR");
    for (const char* name : {"--average-after-epochs", "--average-optimizer"})
      if (app.count(name) > 0 && c.average_every == 0)
        throw ConfigError(std::string(name) + " needs --average-every H");
    train::check_exchange(c);
    sc.auth = planner::parse_auth(auth, "--auth");  // munge in a build without it
    if (!sc.address.empty()) {
      planner::check_address(sc.address, "--scheduler");
      if (sc.job.empty()) throw ConfigError("--scheduler needs --job ID (or DBS_JOB)");
      planner::check_tls_ca(sc.tls_ca, "--tls-ca");
    }
    apply_cluster(o, [&app](const char* option) { return app.count(option) > 0; });
    if (o.cluster && comm::launched_world_size() > 0)
      check_world(*o.cluster, o.cluster_path, comm::launched_world_size());
    check_policy(c);
    if (!o.cluster && !fs::is_directory(c.data_dir))
      throw ConfigError("--data " + c.data_dir + ": no such folder");
    if (!c.metrics_path.empty() && !c.metrics_path.ends_with(".csv") &&
        !c.metrics_path.ends_with(".jsonl"))
      throw ConfigError("--metrics " + c.metrics_path + ": the name must end in .csv or .jsonl");
    prepare_file(c.summary_path, "--summary");
    prepare_file(c.trace_path, "--trace");
    prepare_file(c.metrics_path, "--metrics");
    prepare_file(c.save_weights, "--save-weights");
    if (!c.checkpoint_dir.empty())
      prepare_folder(c.checkpoint_dir, "--checkpoint", c.checkpoint_dir);
  } catch (const Error& e) {
    exit_code = cli::fail("dbs-agent", e.what(), cli::usage_error);
    return false;
  }
  return true;
}

}  // namespace dbs::agent
