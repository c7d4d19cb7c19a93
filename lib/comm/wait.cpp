#include "lib/comm/wait.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "lib/comm/mpi.h"
#include "lib/common/cpu_quota.h"
#include "lib/common/error.h"
#include "lib/common/format.h"

namespace dbs::comm {

Wait parse_wait(const std::string& name) {
  if (name == "spin") return Wait::spin;
  if (name == "sleep") return Wait::sleep;
  if (name == "auto") return Wait::automatic;
  throw ConfigError("unknown wait mode '" + name + "' (expected spin|sleep|auto)");
}

const char* to_string(Wait wait) {
  switch (wait) {
    case Wait::spin:
      return "spin";
    case Wait::sleep:
      return "sleep";
    case Wait::automatic:
      return "auto";
  }
  return "?";
}

Wait automatic_wait(double quota_cores, int threads) {
  return quota_cores > 0 && quota_cores + 1e-6 < threads ? Wait::sleep : Wait::spin;
}

WaitChoice resolve_wait(Wait wait, int threads) {
  if (wait != Wait::automatic) return {wait, std::string("--wait ") + to_string(wait)};
  const auto q = read_cpu_quota();
  const double quota = q ? q->cores : 0.0;
  return {automatic_wait(quota, threads),
          quota > 0 ? format("auto: CPU quota of %.2f core(s) for %d thread(s)", quota, threads)
                    : std::string("auto: no CPU quota")};
}

void await(MPI_Request& request, Wait wait, std::chrono::microseconds max_sleep,
           std::chrono::microseconds spin_first) {
  await_all(std::span<MPI_Request>(&request, 1), wait, max_sleep, spin_first);
}

void await_all(std::span<MPI_Request> requests, Wait wait, std::chrono::microseconds max_sleep,
               std::chrono::microseconds spin_first) {
  const int n = static_cast<int>(requests.size());
  if (wait != Wait::sleep) {
    check_mpi(MPI_Waitall(n, requests.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
    return;
  }
  const auto test = [&] {
    int done = 0;
    check_mpi(MPI_Testall(n, requests.data(), &done, MPI_STATUSES_IGNORE), "MPI_Testall");
    return done != 0;
  };
  const auto spin_until = std::chrono::steady_clock::now() + spin_first;
  do {
    if (test()) return;
  } while (std::chrono::steady_clock::now() < spin_until);
  auto pause = kMinSleep;
  for (;;) {
    std::this_thread::sleep_for(pause);
    if (test()) return;
    pause = std::min(pause * 2, std::max(max_sleep, kMinSleep));
  }
}

}  // namespace dbs::comm
