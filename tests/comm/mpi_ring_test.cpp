// Real-MPI checks of lib/comm (suite 'mpi'): ring allreduce against MPI_Allreduce, and the MPI
// Communicator. Runs on whatever world size mpirun gives it. Prints "ok <name>" (rank 0) or
// "FAIL <name> (rank r): details" (each failing rank); exits 1 if any check failed anywhere.
#include <sched.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "lib/comm/mpi.h"
#include "lib/comm/ring.h"
#include "lib/common/cpu_quota.h"
#include "lib/common/error.h"
#include "lib/common/format.h"
#include "lib/common/timer.h"

namespace {

using dbs::comm::Algorithm;
using dbs::comm::Wait;

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int world_size() {
  int s = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

int failures = 0;

// Runs one check on every rank; its result is "" or what went wrong on this rank.
void check(const std::string& name, const std::function<std::string()>& body) {
  const std::string error = body();
  int bad = error.empty() ? 0 : 1, any = 0;
  dbs::comm::check_mpi(MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD),
                       "MPI_Allreduce");
  if (bad) std::printf("FAIL %s (rank %d): %s\n", name.c_str(), world_rank(), error.c_str());
  if (!any && world_rank() == 0) std::printf("ok %s\n", name.c_str());
  std::fflush(stdout);
  failures += any;
}

std::vector<float> random_floats(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

// Ring vs MPI_Allreduce within float tolerance, and identical bytes on every rank.
std::string ring_matches(std::size_t n, std::size_t chunk_bytes) {
  const std::vector<float> input = random_floats(
      n, 1234u + 7919u * static_cast<unsigned>(world_rank()) + static_cast<unsigned>(n));
  std::vector<float> ring = input, reference = input;
  dbs::comm::ring_allreduce_sum(MPI_COMM_WORLD, ring.data(), n, chunk_bytes);
  dbs::comm::check_mpi(MPI_Allreduce(MPI_IN_PLACE, reference.data(), static_cast<int>(n), MPI_FLOAT,
                                     MPI_SUM, MPI_COMM_WORLD),
                       "MPI_Allreduce");
  // |x| <= 1, so the sum of p terms is off by at most about p * p * eps in any order.
  const float tolerance = 1e-6f * static_cast<float>(world_size() * world_size()) + 1e-6f;
  std::string error;
  for (std::size_t i = 0; i < n && error.empty(); ++i) {
    if (!(std::fabs(ring[i] - reference[i]) <= tolerance)) {
      error = "element " + std::to_string(i) + ": ring " + std::to_string(ring[i]) + " vs MPI " +
              std::to_string(reference[i]);
    }
  }
  std::vector<float> root = ring;
  dbs::comm::check_mpi(MPI_Bcast(root.data(), static_cast<int>(n), MPI_FLOAT, 0, MPI_COMM_WORLD),
                       "MPI_Bcast");
  if (error.empty() && std::memcmp(root.data(), ring.data(), n * sizeof(float)) != 0) {
    error = "bytes differ from rank 0's after ring";
  }
  return error;
}

std::string communicator_works(Algorithm algorithm, Wait wait) {
  auto comm = dbs::comm::make_mpi(algorithm, wait);
  const int p = comm->size(), r = comm->rank();
  if (p != world_size() || r != world_rank()) return "wrong rank or size";
  if (comm->host().empty()) return "empty host name";

  std::vector<float> f(100, static_cast<float>(r + 1));
  comm->allreduce_sum(f);
  const auto expected = static_cast<float>(p * (p + 1) / 2);
  for (float x : f) {
    if (x != expected) return "float allreduce gave " + std::to_string(x);
  }
  std::vector<double> d(3, 0.5 * r);
  comm->allreduce_sum(d);
  if (d[2] != 0.25 * p * (p - 1)) return "double allreduce gave " + std::to_string(d[2]);

  const char mine[3] = {'a', static_cast<char>('0' + r % 10), 'z'};
  std::vector<char> all(3 * static_cast<std::size_t>(p));
  comm->allgather_bytes(mine, sizeof(mine), all.data());
  for (int k = 0; k < p; ++k) {
    if (all[3 * static_cast<std::size_t>(k) + 1] != static_cast<char>('0' + k % 10)) {
      return "allgather slot " + std::to_string(k) + " wrong";
    }
  }

  const int root = p - 1;
  long long value = 1000 + r;
  comm->broadcast_bytes(&value, sizeof(value), root);
  if (value != 1000 + root) return "broadcast gave " + std::to_string(value);
  comm->barrier();
  return "";
}

// The halves over uneven segments (rank r's count grows with r; the first is empty when
// `empty_first`): right after the reduce-scatter this rank's segment is the allreduced sum within
// float tolerance, and after the allgather the whole buffer is, with every rank's bytes equal
// (each segment has one owner).
std::string halves_match(Algorithm algorithm, Wait wait, std::size_t n, bool empty_first) {
  auto comm = dbs::comm::make_mpi(algorithm, wait);
  const int p = comm->size(), r = comm->rank();
  if (p < 1) return "no ranks";
  std::vector<std::size_t> counts(static_cast<std::size_t>(p));
  std::size_t weights = 0;
  for (int k = 0; k < p; ++k) weights += static_cast<std::size_t>(k + 1);
  std::size_t given = 0;
  for (int k = 0; k < p; ++k) {
    counts[static_cast<std::size_t>(k)] = n * static_cast<std::size_t>(k + 1) / weights;
    given += counts[static_cast<std::size_t>(k)];
  }
  counts[static_cast<std::size_t>(p - 1)] += n - given;
  if (empty_first && p > 1) {
    counts[1] += counts[0];
    counts[0] = 0;
  }
  const std::vector<float> input = random_floats(n, 99u + 31u * static_cast<unsigned>(r));
  std::vector<float> data = input, reference = input;
  dbs::comm::check_mpi(MPI_Allreduce(MPI_IN_PLACE, reference.data(), static_cast<int>(n), MPI_FLOAT,
                                     MPI_SUM, MPI_COMM_WORLD),
                       "MPI_Allreduce");
  const float tolerance = 1e-6f * static_cast<float>(p * p) + 1e-6f;
  const auto differs = [&](std::size_t begin, std::size_t end) -> std::string {
    for (std::size_t i = begin; i < end; ++i)
      if (!(std::fabs(data[i] - reference[i]) <= tolerance))
        return "element " + std::to_string(i) + ": " + std::to_string(data[i]) + " vs " +
               std::to_string(reference[i]);
    return "";
  };
  std::size_t begin = 0;
  for (int k = 0; k < r; ++k) begin += counts[static_cast<std::size_t>(k)];
  comm->reduce_scatter_sum(data, counts);
  if (std::string e = differs(begin, begin + counts[static_cast<std::size_t>(r)]); !e.empty())
    return "after the reduce-scatter, " + e;
  comm->allgather_segments(data, counts);
  if (std::string e = differs(0, n); !e.empty()) return "after the allgather, " + e;
  std::vector<float> root = data;
  comm->broadcast_bytes(root.data(), n * sizeof(float), 0);
  if (std::memcmp(root.data(), data.data(), n * sizeof(float)) != 0)
    return "bytes differ from rank 0's after the allgather";
  return "";
}

// Three buffers started with start_allreduce_sum, progressed, finished: each equals its
// MPI_Allreduce within float tolerance (Open MPI's non-blocking allreduce may add in another
// order on 3 or more ranks) with the same bytes on every rank, and a rank that arrives late
// (rank 0, 0.2 s) does not break it.
std::string started_allreduces_match(Wait wait) {
  auto comm = dbs::comm::make_mpi(Algorithm::mpi, wait);
  std::vector<std::vector<float>> data, reference;
  for (const std::size_t n : {101110u, 1u, 37312u}) {
    data.push_back(random_floats(
        n, 7u + 13u * static_cast<unsigned>(comm->rank()) + static_cast<unsigned>(n)));
    reference.push_back(data.back());
    dbs::comm::check_mpi(MPI_Allreduce(MPI_IN_PLACE, reference.back().data(), static_cast<int>(n),
                                       MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
                         "MPI_Allreduce");
  }
  if (comm->rank() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  for (auto& d : data) {
    comm->start_allreduce_sum(d);
    comm->progress();
  }
  comm->finish();
  const float tolerance = 1e-6f * static_cast<float>(comm->size() * comm->size()) + 1e-6f;
  for (std::size_t k = 0; k < data.size(); ++k) {
    for (std::size_t i = 0; i < data[k].size(); ++i)
      if (!(std::fabs(data[k][i] - reference[k][i]) <= tolerance))
        return "buffer " + std::to_string(k) + " element " + std::to_string(i) + ": " +
               std::to_string(data[k][i]) + " vs MPI_Allreduce " + std::to_string(reference[k][i]);
    std::vector<float> root = data[k];
    comm->broadcast_bytes(root.data(), root.size() * sizeof(float), 0);
    if (root != data[k]) return "buffer " + std::to_string(k) + ": bytes differ from rank 0's";
  }
  comm->finish();  // nothing pending: returns at once
  return "";
}

// With Wait::sleep, ranks waiting 0.4 s in an allreduce for rank 0 use little CPU.
std::string waiting_sleeps(bool overlap) {
  auto comm = dbs::comm::make_mpi(Algorithm::mpi, Wait::sleep);
  comm->barrier();
  if (comm->rank() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(400));
  std::vector<float> f(1000, 1.0f);
  const double cpu0 = dbs::cpu_seconds();
  const dbs::Stopwatch wall;
  if (overlap) {  // --overlap's exchange: started, then finished
    comm->start_allreduce_sum(f);
    comm->finish();
  } else {
    comm->allreduce_sum(f);
  }
  const double cpu = dbs::cpu_seconds() - cpu0, waited = wall.seconds();
  if (f[999] != static_cast<float>(comm->size())) return "allreduce gave " + std::to_string(f[999]);
  if (comm->rank() == 0 || waited < 0.2) return "";
  return cpu < 0.25 * waited
             ? ""
             : "waited " + std::to_string(waited) + " s using " + std::to_string(cpu) + " s of CPU";
}

// The ring (its halves, or the whole allreduce) with Wait::sleep: rank 0 enters 0.4 s late (no
// barrier before), so the others wait inside the ring's steps for its messages; they use under
// half a core doing so, and the results are right.
std::string ring_waits_asleep(bool halves) {
  int p = 1, r = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  const std::size_t n = 4097;
  std::vector<std::size_t> counts(static_cast<std::size_t>(p), n / static_cast<std::size_t>(p));
  counts.back() += n % static_cast<std::size_t>(p);
  std::vector<float> data(n, static_cast<float>(r + 1));
  MPI_Barrier(MPI_COMM_WORLD);
  if (r == 0) std::this_thread::sleep_for(std::chrono::milliseconds(400));
  const double cpu0 = dbs::cpu_seconds();
  const dbs::Stopwatch wall;
  if (halves) {
    dbs::comm::ring_reduce_scatter_sum(MPI_COMM_WORLD, data.data(), counts, 1 << 20, Wait::sleep);
    dbs::comm::ring_allgather(MPI_COMM_WORLD, data.data(), counts, 1 << 20, Wait::sleep);
  } else {
    dbs::comm::ring_allreduce_sum(MPI_COMM_WORLD, data.data(), n, 1 << 20, Wait::sleep);
  }
  const double cpu = dbs::cpu_seconds() - cpu0, waited = wall.seconds();
  const float want = static_cast<float>(p * (p + 1) / 2);
  for (std::size_t i = 0; i < n; ++i)
    if (data[i] != want) return "element " + std::to_string(i) + ": " + std::to_string(data[i]);
  if (r == 0 || waited < 0.2) return "";
  // The ring's waits poll at least every kDataSleep (100 us), for its data's latency: 19-23% of
  // a core on a 2-core Xeon with nothing else running, 25% with other tests beside it; a
  // spinning wait takes the whole core.
  return cpu < 0.5 * waited
             ? ""
             : "waited " + std::to_string(waited) + " s using " + std::to_string(cpu) + " s of CPU";
}

// The value of Open MPI's control variable `name` (MPI_T), or "" where it has none.
std::string cvar(const char* name) {
  int provided = 0, index = 0, count = 0;
  if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return "";
  std::string value;
  MPI_T_cvar_handle handle = nullptr;
  if (MPI_T_cvar_get_index(name, &index) == MPI_SUCCESS &&
      MPI_T_cvar_handle_alloc(index, nullptr, &handle, &count) == MPI_SUCCESS) {
    char title[256], about[1024];
    int title_len = sizeof title, about_len = sizeof about, verbosity = 0, bind = 0, scope = 0;
    MPI_Datatype type = MPI_DATATYPE_NULL;
    MPI_T_enum enumtype = nullptr;
    MPI_T_cvar_get_info(index, title, &title_len, &verbosity, &type, &enumtype, about, &about_len,
                        &bind, &scope);
    if (type == MPI_INT) {
      int v = 0;
      if (MPI_T_cvar_read(handle, &v) == MPI_SUCCESS) value = std::to_string(v);
    } else if (type == MPI_UNSIGNED_LONG) {
      unsigned long v = 0;
      if (MPI_T_cvar_read(handle, &v) == MPI_SUCCESS) value = std::to_string(v);
    }
    MPI_T_cvar_handle_free(&handle);
  }
  MPI_T_finalize();
  return value;
}

// MpiRuntime's defaults for Open MPI (lib/comm/mpi.cpp) are what the library runs with, unless
// the environment at start (given: the variable's value then, or none) set them.
std::string runtime_default(const char* name, const std::optional<std::string>& given,
                            const std::string& ours) {
  const std::string want = given.value_or(ours), got = cvar(name);
  return got == want ? "" : std::string(name) + " is '" + got + "', expected '" + want + "'";
}

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::optional<std::string>(v) : std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  const auto eager = env("OMPI_MCA_btl_tcp_eager_limit");
  const auto iallreduce = env("OMPI_MCA_coll_libnbc_iallreduce_algorithm");
  const auto iallgather = env("OMPI_MCA_coll_libnbc_iallgather_algorithm");
  const int launched = dbs::comm::launched_world_size();
  dbs::comm::MpiRuntime mpi(&argc, &argv);
  try {
    for (std::size_t n : {1u, 2u, 3u, 7u, 1000u, 4097u, 690590u, 1000000u}) {
      check("Ring.MatchesMpiAllreduce.n" + std::to_string(n),
            [n] { return ring_matches(n, 1 << 20); });
    }
    for (std::size_t n : {5u, 4097u, 100003u}) {
      check("Ring.MatchesMpiAllreduce.SmallChunks.n" + std::to_string(n),
            [n] { return ring_matches(n, 64); });
    }
    check("Ring.ZeroCountIsNoop", [] {
      float x = 42.0f;
      dbs::comm::ring_allreduce_sum(MPI_COMM_WORLD, &x, 0);
      return x == 42.0f ? std::string() : std::string("buffer changed");
    });
    check("Mpi.Communicator.Ring", [] { return communicator_works(Algorithm::ring, Wait::spin); });
    check("Mpi.Communicator.Mpi", [] { return communicator_works(Algorithm::mpi, Wait::spin); });
    check("Mpi.Communicator.Ring.Sleep",
          [] { return communicator_works(Algorithm::ring, Wait::sleep); });
    check("Mpi.Communicator.Mpi.Sleep",
          [] { return communicator_works(Algorithm::mpi, Wait::sleep); });
    check("Mpi.Communicator.Mpi.Rank0SleepsOthersSpin", [] {
      return communicator_works(Algorithm::mpi, world_rank() == 0 ? Wait::sleep : Wait::spin);
    });
    for (const Algorithm a : {Algorithm::mpi, Algorithm::ring}) {
      const std::string name = std::string("Mpi.Halves.") + dbs::comm::to_string(a);
      for (std::size_t n : {1u, 10u, 4097u, 690590u}) {
        check(name + ".n" + std::to_string(n),
              [a, n] { return halves_match(a, Wait::spin, n, false); });
        check(name + ".EmptyFirst.n" + std::to_string(n),
              [a, n] { return halves_match(a, Wait::spin, n, true); });
      }
      check(name + ".Sleep", [a] { return halves_match(a, Wait::sleep, 4097, false); });
    }
    check("Mpi.StartedAllreduces.Spin", [] { return started_allreduces_match(Wait::spin); });
    check("Mpi.StartedAllreduces.Sleep", [] { return started_allreduces_match(Wait::sleep); });
    check("Mpi.Wait.WaitingRanksSleep", [] { return waiting_sleeps(false); });
    check("Mpi.Overlap.WaitingRanksSleep", [] { return waiting_sleeps(true); });
    check("Ring.Halves.WaitingRanksSleep", [] { return ring_waits_asleep(true); });
    check("Ring.Allreduce.WaitingRanksSleep", [] { return ring_waits_asleep(false); });
    check("Mpi.Runtime.TcpEagerLimit",
          [&] { return runtime_default("btl_tcp_eager_limit", eager, "4194304"); });
    check("Mpi.Runtime.LaunchedWorldSize", [&] {
      int size = 0;
      MPI_Comm_size(MPI_COMM_WORLD, &size);
      return launched == size ? std::string()
                              : "launched_world_size() is " + std::to_string(launched) +
                                    ", MPI_COMM_WORLD has " + std::to_string(size);
    });
    check("Mpi.Runtime.LibnbcIallreduceRingUpTo8RanksElseRabenseifner", [&] {
      return runtime_default("coll_libnbc_iallreduce_algorithm", iallreduce,
                             launched > dbs::comm::kRingRanks ? "3" : "1");
    });
    check("Mpi.Runtime.LibnbcIallgatherRecursiveDoubling",
          [&] { return runtime_default("coll_libnbc_iallgather_algorithm", iallgather, "2"); });
    check("Mpi.ParseWait", [] {
      if (dbs::comm::parse_wait("auto") != Wait::automatic) return std::string("auto");
      try {
        dbs::comm::parse_wait("yield");
      } catch (const dbs::ConfigError& e) {
        return std::string(e.what()) == "unknown wait mode 'yield' (expected spin|sleep|auto)"
                   ? std::string()
                   : std::string("message: ") + e.what();
      }
      return std::string("no ConfigError for 'yield'");
    });
    check("Mpi.Wait.AutomaticSleepsOnlyWhereTheQuotaIsBelowTheThreads", [] {
      using dbs::comm::automatic_wait;
      const struct {
        double quota;
        int threads;
        Wait want;
      } cases[] = {{0, 1, Wait::spin},   {0.33, 1, Wait::sleep}, {0.999, 1, Wait::sleep},
                   {1.0, 1, Wait::spin}, {1.5, 2, Wait::sleep},  {2.0, 2, Wait::spin},
                   {4.0, 2, Wait::spin}};
      for (const auto& c : cases)
        if (automatic_wait(c.quota, c.threads) != c.want)
          return "quota " + std::to_string(c.quota) + ", " + std::to_string(c.threads) +
                 " threads: got " + dbs::comm::to_string(automatic_wait(c.quota, c.threads));
      return std::string();
    });
    // This job's ranks all run on this host: host_share counts them, their threads and the cores
    // of their CPU masks (here the same mask on every rank: this process's).
    check("Mpi.HostShare.CountsTheRanksThreadsAndCoresOfTheHost", [] {
      const int threads = world_rank() + 1;  // 1 + 2 + ... + size in total
      auto comm = dbs::comm::make_mpi(Algorithm::mpi, Wait::spin);
      const dbs::comm::HostShare share = dbs::comm::host_share(*comm, threads);
      const int n = world_size(), total = n * (n + 1) / 2;
      cpu_set_t mask;
      CPU_ZERO(&mask);
      if (sched_getaffinity(0, sizeof mask, &mask) != 0) return std::string("sched_getaffinity");
      const int cores = CPU_COUNT(&mask);
      if (share.ranks != n || share.threads != total || share.first != 0 || share.cores != cores)
        return "host_share: " + std::to_string(share.ranks) + " rank(s), " +
               std::to_string(share.threads) + " threads, " + std::to_string(share.cores) +
               " core(s), first " + std::to_string(share.first) + "; expected " +
               std::to_string(n) + ", " + std::to_string(total) + ", " + std::to_string(cores) +
               ", 0";
      if (share.oversubscribed() != (total > cores)) return std::string("oversubscribed()");
      return std::string();
    });
    // The rank says how it waits and why: as given, or auto's choice by its CPU quota.
    check("Mpi.Wait.SaysHowAndWhy", [] {
      if (const auto w = dbs::comm::make_mpi(Algorithm::mpi, Wait::sleep)->waiting();
          w != "sleep (--wait sleep)")
        return "--wait sleep: '" + w + "'";
      auto comm = dbs::comm::make_mpi(Algorithm::mpi, Wait::automatic);
      comm->set_threads(1);
      const auto quota = dbs::read_cpu_quota();
      const double q = quota ? quota->cores : 0.0;
      const std::string want =
          q <= 0 ? "spin (auto: no CPU quota)"
                 : dbs::format("%s (auto: CPU quota of %.2f core(s) for 1 thread(s))",
                               q + 1e-6 < 1 ? "sleep" : "spin", q);
      if (comm->waiting() != want)
        return "auto: '" + comm->waiting() + "', expected '" + want + "'";
      return std::string();
    });
    check("Mpi.ParseAlgorithm", [] {
      if (dbs::comm::parse_algorithm("ring") != Algorithm::ring) return std::string("ring");
      try {
        dbs::comm::parse_algorithm("tree");
      } catch (const dbs::ConfigError& e) {
        return std::string(e.what()).find("mpi|ring") == std::string::npos
                   ? std::string("message lacks mpi|ring: ") + e.what()
                   : std::string();
      }
      return std::string("no ConfigError for 'tree'");
    });
  } catch (const std::exception& e) {
    // Never hang: one rank's failure ends the whole job.
    std::fprintf(stderr, "FAIL rank %d: %s\n", world_rank(), e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (world_rank() == 0) {
    std::printf("%s: %d failed on %d ranks\n", failures ? "FAILED" : "PASSED", failures,
                world_size());
  }
  return failures ? 1 : 0;
}
