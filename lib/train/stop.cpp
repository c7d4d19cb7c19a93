#include "lib/train/stop.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>

namespace dbs::train {
namespace {

std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

void on_signal(int signal) {
  int none = 0;
  if (g_signal.compare_exchange_strong(none, signal)) return;
  // Second signal: only async-signal-safe calls from here on.
  const char msg[] = "dbs-agent: second signal: stopping at once\n";
  [[maybe_unused]] const auto n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
  ::_exit(128 + signal);
}

}  // namespace

void install_stop_handlers() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // blocking calls (MPI, sockets) go on; the loop checks the flag
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int stop_signal() {
  return g_signal.load();
}

std::string signal_name(int signal) {
  if (signal == SIGINT) return "SIGINT";
  if (signal == SIGTERM) return "SIGTERM";
  return "signal " + std::to_string(signal);
}

}  // namespace dbs::train
