// dbs-agent: one MPI rank per node. Parses and checks options (before MPI starts), starts MPI,
// loads the data, trains, and on any error on any rank ends the whole job (MPI_Abort) instead of
// leaving the others hanging. SIGINT/SIGTERM stop the job after the current step (exit 130/143).
#include <dbs/planner.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string_view>

#include "agents/cluster.h"
#include "agents/filter.h"
#include "agents/options.h"
#include "agents/threads.h"
#include "lib/comm/group.h"
#include "lib/comm/mpi.h"
#include "lib/common/cli.h"
#include "lib/common/log.h"
#include "lib/data/dataset.h"
#include "lib/data/subset.h"
#include "lib/emulate/link.h"
#include "lib/emulate/workload.h"
#include "lib/nn/simd.h"
#include "lib/nn/threads.h"
#include "lib/train/stop.h"
#include "lib/train/trainer.h"

int main(int argc, char** argv) {
  using namespace dbs;
  if (argc > 1 && std::string_view(argv[1]) == "filter")
    return agent::filter_main(argc - 1, argv + 1);
  agent::Options opts;
  int code = 0;
  const bool parsed = agent::parse_options(argc, argv, opts, code);
  // Under mpirun a rank whose options are refused starts MPI before it exits, and the ranks
  // agree whether any was: Open MPI 4.1's mpirun hangs in its abort where 32 or more of its
  // processes end before they start MPI (`mpirun -np 32 /bin/false` does as well). Alone, or
  // under another launcher, it exits at once.
  if (!parsed && (code == 0 || std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr)) return code;
  if (parsed) log::set_level(log::parse_level(opts.log_level));

  comm::MpiRuntime mpi(&argc, &argv);
  try {
    if (comm::any_rank(!parsed))
      return parsed ? cli::fail("dbs-agent", "stopped: another rank's options were refused",
                                cli::usage_error)
                    : code;
  } catch (const std::exception& e) {
    return cli::fail("dbs-agent", std::string("cannot start: ") + e.what(), cli::runtime_error);
  }
  std::unique_ptr<comm::Communicator> under_network;  // --model synthetic: MPI's, under comm
  std::unique_ptr<comm::Communicator> comm;
  try {
    comm = comm::make_mpi(comm::parse_algorithm(opts.train.allreduce),
                          comm::parse_wait(opts.train.wait));
  } catch (const std::exception& e) {
    return cli::fail("dbs-agent", std::string("cannot start: ") + e.what(), cli::runtime_error);
  }
  train::install_stop_handlers();
  log::set_tag("rank " + std::to_string(comm->rank()));
  try {
    nn::use_simd(opts.simd);
    const agent::ThreadChoice choice = agent::choose_threads(*comm, opts);
    nn::ThreadLimit threads(choice.threads);
    opts.train.threads = threads.threads();
    comm->set_threads(threads.threads());  // --wait auto: sleep where the quota is below them
    log::info("host " + comm->host() + ", " + std::to_string(threads.threads()) +
              " TBB thread(s) (" + choice.why + ") of " + std::to_string(nn::available_threads()) +
              " available, " + std::to_string(comm->size()) + " rank(s), " + nn::simd_in_use() +
              " kernels" + (comm->waiting().empty() ? "" : ", waits: " + comm->waiting()));
    // Emulated ranks wait rather than compute: many to a core is what they are for.
    if (!opts.cluster) agent::warn_oversubscription(*comm, threads.threads());
    data::FashionMnist data;
    std::unique_ptr<nn::Model> model;  // null: the one --model names
    std::shared_ptr<const emulate::Pacer> pacer;
    if (opts.cluster) {  // --model synthetic: the spec's network around the exchange
      agent::check_world(*opts.cluster, opts.cluster_path, comm->size());
      under_network = std::move(comm);
      comm = emulate::with_network(*under_network, *opts.cluster);
      emulate::Workload w = emulate::make_workload(*opts.cluster, comm->rank(), opts.train.seed);
      data = std::move(w.samples);
      model = std::move(w.model);
      pacer = std::move(w.pacer);
    } else {
      data = data::load_fashion_mnist(opts.train.data_dir, opts.train.train_limit,
                                      opts.train.test_limit);
    }
    // Plans through the public API (<dbs/planner.h>), as any other training loop would, over
    // the samples it trains on (--train-subset's, else --train-limit's).
    const std::size_t n_train = opts.train.train_subset.empty()
                                    ? data.train.n
                                    : data::read_subset(opts.train.train_subset).indices.size();
    train::validate(opts.train, comm->size(), n_train);
    const std::unique_ptr<Planner> planner = make_planner(train::settings_of(opts.train, n_train),
                                                          comm::group_of(*comm), opts.scheduler);
    const train::RunResult result =
        train::run(opts.train, *comm, std::move(data), planner.get(), std::move(model));
    planner->finish(result.stop_signal == 0);
    if (pacer) agent::log_pace(*comm, emulate::pace_of(*pacer));
    if (result.stop_signal != 0) {
      if (comm->rank() == 0) {
        const std::string where =
            "epoch " + std::to_string(result.stop_epoch) +
            (result.stop_step > 0 ? " after step " + std::to_string(result.stop_step)
                                  : std::string(" before its first step"));
        log::warn(
            "stopped by " + train::signal_name(result.stop_signal) + " in " + where + "; " +
            (opts.train.checkpoint_dir.empty()
                 ? std::string("no --checkpoint: this run cannot be resumed")
                 : "checkpoint in " + opts.train.checkpoint_dir + " (continue with --resume)"));
      }
      return 128 + result.stop_signal;
    }
    if (comm->rank() == 0 && pacer) {
      std::printf("final: parameter L2 %.4f, sum %.4f\n", result.param_l2, result.param_sum);
    } else if (comm->rank() == 0) {
      std::printf("final: test accuracy %.2f%%, test loss %.4f, parameter L2 %.4f, sum %.4f\n",
                  100.0 * result.test_acc, result.test_loss, result.param_l2, result.param_sum);
    }
  } catch (const std::exception& e) {
    log::error(e.what());
    if (comm->size() > 1) comm->abort(1);
    return 1;
  }
  // A signal that came too late to stop the run (during its last epoch) still says so.
  return train::stop_signal() != 0 ? 128 + train::stop_signal() : 0;
}
