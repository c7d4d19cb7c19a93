// dbs-bench allreduce (run under mpirun): MPI_Allreduce against the own ring allreduce, latency
// and bandwidth per message size. Each call is timed between barriers on every rank and the
// slowest rank's time counts; the figure per size is the median (and the minimum) over the
// repetitions, methods interleaved so background noise hits both alike. --wait adds the
// training's own exchanges (--exchange) in each wait mode given (lib/comm/wait.h), through the
// Communicator the trainer uses: allreduce (allreduce_sum, MPI algorithm: with a rank asleep a
// barrier and the non-blocking allreduce, polled), ring (allreduce_sum, the own ring; asleep,
// each message polled), sharded (reduce_scatter_sum then allgather_segments over equal segments:
// the sharded update's exchange; asleep, the ring's halves) and overlap (start_allreduce_sum of
// the whole buffer then finish(): --overlap's exchange with no backward pass to hide it), and
// allgather (allgather_bytes of the buffer: the control plane's reports and plan check). Their
// figures also give the CPU a call costs (median over the calls of the largest process CPU time
// of any rank), which a rank held by a CPU quota pays in wall time.
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "bench/bench.h"
#include "lib/comm/mpi.h"
#include "lib/comm/ring.h"
#include "lib/common/cli.h"
#include "lib/common/error.h"
#include "lib/common/stats.h"
#include "lib/common/timer.h"

namespace dbs::bench {
namespace {

struct AllreduceOptions {
  std::vector<long> sizes = {1, 16, 256, 4096, 65536, 690590, 1000000};  // floats
  int reps = 50;                                                         // timed calls per size
  std::vector<std::string> waits;  // Communicator wait modes to time as well (spin, sleep)
  std::vector<std::string> exchanges = {"allreduce"};  // which of the Communicator's, per wait
  long ring_chunk = static_cast<long>(comm::kRingChunkBytes);  // the ring column's messages, bytes
};

// One of the training's exchanges through a Communicator made for it (collective: every rank
// makes the same ones in the same order).
struct Exchange {
  std::string name, wait;
  std::unique_ptr<comm::Communicator> comm;

  void run(std::span<float> buf) const {
    if (name == "sharded") {
      const auto p = static_cast<std::size_t>(comm->size());
      std::vector<std::size_t> counts(p, buf.size() / p);
      for (std::size_t r = 0; r < buf.size() % p; ++r) ++counts[r];
      comm->reduce_scatter_sum(buf, counts);
      comm->allgather_segments(buf, counts);
    } else if (name == "overlap") {
      comm->start_allreduce_sum(buf);
      comm->finish();
    } else if (name == "allgather") {
      // Every rank's buffer to every rank; then buf's first and last element hold the sum of
      // the ranks' first and last, as an allreduce leaves them.
      const std::size_t n = buf.size(), p = static_cast<std::size_t>(comm->size());
      std::vector<float> all(n * p);
      comm->allgather_bytes(buf.data(), n * sizeof(float), all.data());
      float first = 0, last = 0;
      for (std::size_t r = 0; r < p; ++r) first += all[r * n], last += all[r * n + n - 1];
      buf.front() = first;
      buf.back() = last;
    } else {
      comm->allreduce_sum(buf);
    }
  }
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
  std::vector<Exchange> comms;  // collective: every rank, same order
  for (const std::string& e : o.exchanges)
    for (const std::string& w : o.waits)
      comms.push_back({e, w,
                       comm::make_mpi(e == "ring" ? comm::Algorithm::ring : comm::Algorithm::mpi,
                                      comm::parse_wait(w))});
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
                                        MPI_SUM, MPI_COMM_WORLD),
                          "MPI_Allreduce");
        else if (alg == 1)
          comm::ring_allreduce_sum(MPI_COMM_WORLD, buf.data(), static_cast<std::size_t>(n),
                                   static_cast<std::size_t>(o.ring_chunk));
        else
          comms[static_cast<std::size_t>(alg - 2)].run(std::span<float>(buf));
        const double wall = MPI_Wtime() - t0, used = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - c0;
        DBS_CHECK_EQ(buf.front(), static_cast<float>(size));  // first and last rank's segments
        DBS_CHECK_EQ(buf.back(), static_cast<float>(size));
        const double tw = slowest(wall), tc = slowest(used);
        if (r >= 0) {
          t[static_cast<std::size_t>(alg)].push_back(tw);
          cpu[static_cast<std::size_t>(alg)].push_back(tc);
        }
      }
    }
    auto stat = [&](std::vector<double> v, std::vector<double> c) {
      const double med = stats::median(v), min = *std::min_element(v.begin(), v.end());
      const double bytes = 4.0 * static_cast<double>(n);
      return nlohmann::json{{"median_us", med * 1e6},
                            {"min_us", min * 1e6},
                            {"bandwidth_gbs", bytes / med / 1e9},
                            {"cpu_median_us", stats::median(c) * 1e6}};
    };
    nlohmann::json m = stat(t[0], cpu[0]), g = stat(t[1], cpu[1]);
    nlohmann::json row = {{"floats", n},
                          {"bytes", 4 * n},
                          {"mpi", m},
                          {"ring", g},
                          {"ring_over_mpi_bandwidth",
                           g["bandwidth_gbs"].get<double>() / m["bandwidth_gbs"].get<double>()}};
    if (!comms.empty()) {
      nlohmann::json by_exchange = nlohmann::json::object();
      for (std::size_t k = 0; k < comms.size(); ++k)
        by_exchange[comms[k].name][comms[k].wait] = stat(t[k + 2], cpu[k + 2]);
      row["communicator"] = by_exchange;
    }
    results.push_back(row);
  }
  if (rank == 0)
    std::puts(nlohmann::json(
                  {{"bench", "allreduce"},
                   {"ranks", size},
                   {"reps", o.reps},
                   {"ring_chunk_bytes", o.ring_chunk},
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
      app, action, "allreduce",
      "MPI_Allreduce vs the ring allreduce per message size (run under mpirun)", o, run_allreduce);
  cmd->add_option("--sizes", o->sizes, "message sizes in floats")
      ->delimiter(',')
      ->capture_default_str()
      ->check(dbs::cli::between(1, INT_MAX));
  cmd->add_option("--reps", o->reps, "timed calls per size and method")
      ->capture_default_str()
      ->check(dbs::cli::above(0));
  cmd->add_option("--ring-chunk", o->ring_chunk,
                  "largest message of the ring column, bytes (the training's ring: " +
                      std::to_string(comm::kRingChunkBytes) + ")")
      ->capture_default_str()
      ->check(dbs::cli::between(4, INT_MAX));
  CLI::Option* wait = cmd->add_option("--wait", o->waits,
                                      "also time the training's exchanges (--exchange) waiting "
                                      "this way: spin, sleep, auto (list)")
                          ->delimiter(',')
                          ->check(CLI::IsMember({"spin", "sleep", "auto"}));
  cmd->add_option("--exchange", o->exchanges,
                  "the exchanges --wait times: allreduce (allreduce_sum, MPI algorithm), ring "
                  "(allreduce_sum, own ring), sharded (reduce_scatter_sum + allgather_segments), "
                  "overlap (start_allreduce_sum + finish), allgather (allgather_bytes of the "
                  "buffer, as the control plane's) (list)")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::IsMember({"allreduce", "ring", "sharded", "overlap", "allgather"}))
      ->needs(wait);
}

}  // namespace dbs::bench
