// dbs-bench allreduce (run under mpirun): MPI_Allreduce against the own ring allreduce, latency
// and bandwidth per message size. Each call is timed between barriers on every rank and the
// slowest rank's time counts; the figure per size is the median (and the minimum) over the
// repetitions, methods interleaved so background noise hits both alike. --wait adds the
// training's own exchange, the Communicator's allreduce_sum (MPI algorithm) in each wait mode
// given (lib/comm/wait.h): with a rank asleep that is a barrier and the non-blocking allreduce,
// polled with sleeps; its figures also give the CPU a call costs (median over the calls of the
// largest process CPU time of any rank), which a rank held by a CPU quota pays in wall time.
#include <mpi.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lib/common/cli.h"
#include "bench/bench.h"
#include "lib/comm/mpi.h"
#include "lib/comm/ring.h"
#include "lib/common/error.h"
#include "lib/common/timer.h"

namespace dbs::bench {
namespace {

struct AllreduceOptions {
  std::vector<long> sizes = {1, 16, 256, 4096, 65536, 690590, 1000000};  // floats
  int reps = 50;                                                        // timed calls per size
  std::vector<std::string> waits;  // Communicator wait modes to time as well (spin, sleep)
};

double slowest(double t) {
  double max = 0;
  MPI_Allreduce(&t, &max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return max;
}

int run_allreduce(const AllreduceOptions& o) {
  int argc = 0;
  char** argv = nullptr;
  comm::MpiRuntime mpi(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  nlohmann::json results = nlohmann::json::array();
  std::vector<std::unique_ptr<comm::Communicator>> comms;  // collective: every rank, same order
  for (const std::string& w : o.waits)
    comms.push_back(comm::make_mpi(comm::Algorithm::mpi, comm::parse_wait(w)));
  const int methods = 2 + static_cast<int>(comms.size());
  for (const long n : o.sizes) {
    std::vector<float> buf(static_cast<std::size_t>(n), 1.0f);
    std::vector<std::vector<double>> t(static_cast<std::size_t>(methods)), cpu(t.size());
    for (int r = -2; r < o.reps; ++r) {  // two untimed warm-up rounds
      for (int alg = 0; alg < methods; ++alg) {
        std::fill(buf.begin(), buf.end(), 1.0f);
        MPI_Barrier(MPI_COMM_WORLD);
        const double c0 = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
        const double t0 = MPI_Wtime();
        if (alg == 0)
          comm::check_mpi(MPI_Allreduce(MPI_IN_PLACE, buf.data(), static_cast<int>(n), MPI_FLOAT,
                                        MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
        else if (alg == 1)
          comm::ring_allreduce_sum(MPI_COMM_WORLD, buf.data(), static_cast<std::size_t>(n));
        else
          comms[static_cast<std::size_t>(alg - 2)]->allreduce_sum(std::span<float>(buf));
        const double wall = MPI_Wtime() - t0, used = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - c0;
        DBS_CHECK_EQ(buf[0], static_cast<float>(size));
        const double tw = slowest(wall), tc = slowest(used);
        if (r >= 0) {
          t[static_cast<std::size_t>(alg)].push_back(tw);
          cpu[static_cast<std::size_t>(alg)].push_back(tc);
        }
      }
    }
    auto stat = [&](std::vector<double> v, std::vector<double> c) {
      std::sort(v.begin(), v.end());
      std::sort(c.begin(), c.end());
      const double med = v[v.size() / 2], min = v.front();
      const double bytes = 4.0 * static_cast<double>(n);
      return nlohmann::json{{"median_us", med * 1e6}, {"min_us", min * 1e6},
                            {"bandwidth_gbs", bytes / med / 1e9},
                            {"cpu_median_us", c[c.size() / 2] * 1e6}};
    };
    nlohmann::json m = stat(t[0], cpu[0]), g = stat(t[1], cpu[1]);
    nlohmann::json row = {{"floats", n}, {"bytes", 4 * n}, {"mpi", m}, {"ring", g},
                          {"ring_over_mpi_bandwidth",
                           g["bandwidth_gbs"].get<double>() / m["bandwidth_gbs"].get<double>()}};
    if (!comms.empty()) {
      nlohmann::json by_wait = nlohmann::json::object();
      for (std::size_t k = 0; k < comms.size(); ++k) by_wait[o.waits[k]] = stat(t[k + 2], cpu[k + 2]);
      row["communicator"] = by_wait;
    }
    results.push_back(row);
  }
  if (rank == 0)
    std::puts(nlohmann::json({{"bench", "allreduce"}, {"ranks", size}, {"reps", o.reps},
                              {"bandwidth", "bytes of the buffer / median time"},
                              {"cpu", "median over the calls of the largest process CPU time of any rank"},
                              {"sizes", results}})
                  .dump(2)
                  .c_str());
  return 0;
}

}  // namespace

void add_allreduce_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<AllreduceOptions>();
  auto* cmd = cli::add_command(
      app, action, "allreduce", "MPI_Allreduce vs the ring allreduce per message size (run under mpirun)", o,
      run_allreduce);
  cmd->add_option("--sizes", o->sizes, "message sizes in floats")->delimiter(',')->capture_default_str()->check(dbs::cli::between(1, INT_MAX));
  cmd->add_option("--reps", o->reps, "timed calls per size and method")->capture_default_str()->check(dbs::cli::above(0));
  cmd->add_option("--wait", o->waits, "also time the training's exchange (Communicator::allreduce_sum) waiting this way: spin, sleep, auto (list)")->delimiter(',')->check(CLI::IsMember({"spin", "sleep", "auto"}));
}

}  // namespace dbs::bench
