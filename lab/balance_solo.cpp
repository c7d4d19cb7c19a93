// dbs-lab balance's stand-alone rounds (balance.h).
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "lab/balance.h"
#include "lib/comm/mpi.h"

namespace dbs::lab {
namespace {

// Rank r training alone (a world of one) on `limit` samples, under its disturbances, active
// throughout (where it is rank 0): the stand-alone speed under the disturbance.
train::Config solo_config(const BalanceOptions& o, int r, std::size_t limit) {
  train::Config c = base_config(o);
  c.policy = parse_policy("static");
  c.epochs = o.solo_epochs;
  c.train_limit = limit;
  c.test_limit = 256;
  for (trace::Disturbance d : disturbances(o)) {
    if (d.rank != r) continue;
    d.rank = 0;
    d.from = 1.0;
    d.to = -1.0;
    c.disturbances.push_back(d);
  }
  return c;
}

}  // namespace

std::vector<double> solo_rates(const BalanceOptions& o, comm::Communicator& comm,
                               const data::FashionMnist& data) {
  std::vector<double> rates(static_cast<std::size_t>(comm.size()), 0.0);
  for (int r = 0; r < comm.size(); ++r) {
    double rate = 0;
    if (comm.rank() == r) {
      const train::Config c = solo_config(o, r, o.solo_limit);
      auto single = comm::make_single();
      const train::RunResult res = train::run(c, *single, data);
      const auto& last = res.epochs.back();
      rate = static_cast<double>(std::min(o.solo_limit, data.train.n)) / last.wall_s;
    }
    // The others wait here, asleep whatever --wait says: they must not take CPU from rank r.
    MPI_Request arrived = MPI_REQUEST_NULL;
    comm::check_mpi(MPI_Ibarrier(MPI_COMM_WORLD, &arrived), "MPI_Ibarrier");
    comm::await(arrived, comm::Wait::sleep);
    comm.broadcast_bytes(&rate, sizeof rate, r);
    rates[static_cast<std::size_t>(r)] = rate;
  }
  return rates;
}

std::vector<double> concurrent_rates(const BalanceOptions& o, comm::Communicator& comm,
                                     const data::FashionMnist& data,
                                     const std::vector<double>& sequential, double& cover,
                                     std::vector<int>& fillers) {
  const double fastest = *std::max_element(sequential.begin(), sequential.end());
  const double share =
      fastest > 0 ? sequential[static_cast<std::size_t>(comm.rank())] / fastest : 1.0;
  const std::size_t b = static_cast<std::size_t>(o.batch);
  const std::size_t steps = std::max<std::size_t>(
      1, static_cast<std::size_t>(
             std::lround(static_cast<double>(o.solo_limit) * share / static_cast<double>(b))));
  const std::size_t limit = std::min(steps * b, data.train.n);
  train::Config c = solo_config(o, comm.rank(), limit);
  // steady_clock is CLOCK_MONOTONIC: one clock for every process of this host.
  const auto now = [] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  MPI_Request ready = MPI_REQUEST_NULL;  // start together
  comm::check_mpi(MPI_Ibarrier(MPI_COMM_WORLD, &ready), "MPI_Ibarrier");
  comm::await(ready, comm::Wait::sleep);
  const double begin = now();
  auto single = comm::make_single();
  const train::RunResult res = train::run(c, *single, data);
  const double end = now(), wall = res.epochs.back().wall_s;
  MPI_Request done = MPI_REQUEST_NULL;  // every rank's measured training is over
  comm::check_mpi(MPI_Ibarrier(MPI_COMM_WORLD, &done), "MPI_Ibarrier");
  c.epochs = 1;
  int filled = 0;
  for (int over = 0;; ++filled) {
    comm::check_mpi(MPI_Test(&done, &over, MPI_STATUS_IGNORE), "MPI_Test");
    if (over) break;
    auto filler = comm::make_single();
    train::run(c, *filler, data);
  }
  fillers.assign(static_cast<std::size_t>(comm.size()), 0);
  comm.allgather_bytes(&filled, sizeof filled, fillers.data());
  // rate, the measured epoch's start and end, the first training's start, the last one's end
  const double row[5] = {static_cast<double>(limit) / wall, end - wall, end, begin, now()};
  std::vector<double> all(5 * static_cast<std::size_t>(comm.size()));
  comm.allgather_bytes(row, sizeof row, all.data());
  std::vector<double> rates;
  cover = 1.0;
  for (int r = 0; r < comm.size(); ++r) {
    const double* x = &all[5 * static_cast<std::size_t>(r)];
    rates.push_back(x[0]);
    double from = x[1], to = x[2];
    for (int q = 0; q < comm.size(); ++q) {
      if (q == r) continue;
      from = std::max(from, all[5 * static_cast<std::size_t>(q) + 3]);
      to = std::min(to, all[5 * static_cast<std::size_t>(q) + 4]);
    }
    cover = std::min(cover, x[2] > x[1] ? std::max(0.0, to - from) / (x[2] - x[1]) : 0.0);
  }
  return rates;
}

}  // namespace dbs::lab
