// dbs-bench allreduce (run under mpirun): MPI_Allreduce against the own ring allreduce, latency
// and bandwidth per message size. Each call is timed between barriers on every rank and the
// slowest rank's time counts; the figure per size is the median (and the minimum) over the
// repetitions, methods interleaved so background noise hits both alike.
#include <mpi.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <vector>

#include "lib/common/cli.h"
#include "bench/bench.h"
#include "lib/comm/mpi.h"
#include "lib/comm/ring.h"

namespace dbs::bench {
namespace {

struct AllreduceOptions {
  std::vector<long> sizes = {1, 16, 256, 4096, 65536, 690590, 1000000};  // floats
  int reps = 50;                                                        // timed calls per size
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
  for (const long n : o.sizes) {
    std::vector<float> buf(static_cast<std::size_t>(n), 1.0f);
    std::vector<double> t_mpi, t_ring;
    for (int r = -2; r < o.reps; ++r) {  // two untimed warm-up rounds
      for (int alg = 0; alg < 2; ++alg) {
        std::fill(buf.begin(), buf.end(), 1.0f);
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        if (alg == 0)
          comm::check_mpi(MPI_Allreduce(MPI_IN_PLACE, buf.data(), static_cast<int>(n), MPI_FLOAT,
                                        MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
        else
          comm::ring_allreduce_sum(MPI_COMM_WORLD, buf.data(), static_cast<std::size_t>(n));
        const double t = slowest(MPI_Wtime() - t0);
        if (r >= 0) (alg == 0 ? t_mpi : t_ring).push_back(t);
      }
    }
    auto stat = [&](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      const double med = v[v.size() / 2], min = v.front();
      const double bytes = 4.0 * static_cast<double>(n);
      return nlohmann::json{{"median_us", med * 1e6}, {"min_us", min * 1e6},
                            {"bandwidth_gbs", bytes / med / 1e9}};
    };
    nlohmann::json m = stat(t_mpi), g = stat(t_ring);
    results.push_back({{"floats", n}, {"bytes", 4 * n}, {"mpi", m}, {"ring", g},
                       {"ring_over_mpi_bandwidth",
                        g["bandwidth_gbs"].get<double>() / m["bandwidth_gbs"].get<double>()}});
  }
  if (rank == 0)
    std::puts(nlohmann::json({{"bench", "allreduce"}, {"ranks", size}, {"reps", o.reps},
                              {"bandwidth", "bytes of the buffer / median time"},
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
  cmd->add_option("--sizes", o->sizes, "message sizes in floats")->delimiter(',')->capture_default_str();
  cmd->add_option("--reps", o->reps, "timed calls per size and method")->capture_default_str()->check(dbs::cli::above(0));
}

}  // namespace dbs::bench
