#include "lib/common/terminal.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace dbs {
namespace {

bool started_by_launcher() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (std::getenv(v) != nullptr) return true;
  return false;
}

// stdout of process pid is a terminal: a character device of the tty (4), /dev/tty and console
// (5) or Unix98 pty (136-143) majors; /dev/null (major 1), files and pipes are not.
bool stdout_of_is_terminal(long pid) {
  struct stat st {};
  if (::stat(("/proc/" + std::to_string(pid) + "/fd/1").c_str(), &st) != 0) return false;
  if (!S_ISCHR(st.st_mode)) return false;
  const unsigned major = ::major(st.st_rdev);
  return major == 4 || major == 5 || (major >= 136 && major <= 143);
}

// Name and parent of process pid from /proc/PID/stat ("pid (comm) state ppid ...").
bool read_stat(long pid, std::string& comm, long& ppid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(f, line)) return false;
  const auto open = line.find('('), close = line.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close + 4 > line.size())
    return false;
  comm = line.substr(open + 1, close - open - 1);
  ppid = std::strtol(line.c_str() + close + 4, nullptr, 10);
  return true;
}

}  // namespace

bool job_output_is_terminal() {
  if (!started_by_launcher()) return ::isatty(STDOUT_FILENO) == 1;
  long pid = static_cast<long>(::getppid());
  for (int depth = 0; depth < 16 && pid > 1; ++depth) {
    std::string comm;
    long parent = 0;
    if (!read_stat(pid, comm, parent)) return false;
    if (comm == "mpirun" || comm == "mpiexec" || comm == "orterun" || comm == "prterun" ||
        comm == "srun")
      return stdout_of_is_terminal(pid);
    pid = parent;
  }
  return false;
}

}  // namespace dbs
