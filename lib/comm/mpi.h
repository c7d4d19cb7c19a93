// The MPI side of lib/comm: process-wide runtime, the allreduce algorithm choice, and a
// Communicator over MPI_COMM_WORLD. MPI is initialised with MPI_THREAD_FUNNELED: only the thread
// that created the MpiRuntime may call collectives.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "lib/comm/communicator.h"
#include "lib/comm/wait.h"

namespace dbs::comm {

// Up to this many ranks Open MPI's non-blocking allreduce goes around the ring; beyond, by
// Rabenseifner's algorithm (MpiRuntime, docs/concepts/exchange.md).
inline constexpr int kRingRanks = 8;

// The ranks of the job as its launcher says before MPI starts (OMPI_COMM_WORLD_SIZE of mpirun,
// PMI_SIZE, SLURM_NTASKS; the first set to a positive number), 0 when none does.
int launched_world_size();

// Owns MPI_Init_thread / MPI_Finalize for the process; create exactly one, first thing in main.
// Sets MPI_ERRORS_RETURN on MPI_COMM_WORLD so failures come back as CommError.
// If MPI was already initialised by someone else, it neither initialises nor finalises.
class MpiRuntime {
 public:
  MpiRuntime(int* argc, char*** argv);
  ~MpiRuntime();
  MpiRuntime(const MpiRuntime&) = delete;
  MpiRuntime& operator=(const MpiRuntime&) = delete;

 private:
  bool owns_ = false;
};

// Throws CommError("<call>: <MPI_Error_string>") unless code is MPI_SUCCESS.
void check_mpi(int code, const char* call);

// Whether any rank of MPI_COMM_WORLD says `mine`: a blocking collective, every rank calls it.
// Throws CommError.
bool any_rank(bool mine);

// How allreduce_sum(float) runs: MPI_Allreduce, or the ring of lib/comm/ring.h.
// Doubles always use MPI_Allreduce.
enum class Algorithm { mpi, ring };

// "mpi" or "ring"; anything else throws ConfigError.
Algorithm parse_algorithm(const std::string& name);
const char* to_string(Algorithm algorithm);

// A Communicator over MPI_COMM_WORLD that waits in its collectives as `wait` says
// (lib/comm/wait.h). Requires a live MpiRuntime. Collective: every rank calls it (the ranks
// agree whether any of them sleeps).
std::unique_ptr<Communicator> make_mpi(Algorithm algorithm, Wait wait = Wait::automatic);

}  // namespace dbs::comm
