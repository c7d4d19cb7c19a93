#include "lib/comm/wait.h"

#include <algorithm>
#include <thread>

#include "lib/comm/mpi.h"
#include "lib/common/cpu_quota.h"
#include "lib/common/error.h"

namespace dbs::comm {

Wait parse_wait(const std::string& name) {
  if (name == "spin") return Wait::spin;
  if (name == "sleep") return Wait::sleep;
  if (name == "auto") return Wait::automatic;
  throw ConfigError("unknown wait mode '" + name + "' (expected spin|sleep|auto)");
}

const char* to_string(Wait wait) {
  switch (wait) {
    case Wait::spin: return "spin";
    case Wait::sleep: return "sleep";
    case Wait::automatic: return "auto";
  }
  return "?";
}

Wait resolve_wait(Wait wait) {
  if (wait != Wait::automatic) return wait;
  const auto q = read_cpu_quota();
  return q && q->cores > 0 ? Wait::sleep : Wait::spin;
}

void await(MPI_Request& request, Wait wait) {
  if (wait != Wait::sleep) {
    check_mpi(MPI_Wait(&request, MPI_STATUS_IGNORE), "MPI_Wait");
    return;
  }
  auto pause = kMinSleep;
  for (;;) {
    int done = 0;
    check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done) return;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, kMaxSleep);
  }
}

}  // namespace dbs::comm
