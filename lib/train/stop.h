// Stopping a run on SIGINT or SIGTERM (Ctrl-C, kill, mpirun, srun, Slurm's time limit). The
// first signal only records itself: the epoch loop ends after the step that is running, at a
// point all ranks agree on (the flag travels in the step's allreduce, so one signalled rank is
// enough and none is left waiting), then writes the checkpoint, summary and trace. A second
// signal ends the process at once with 128 + signal.
#pragma once

#include <string>

namespace dbs::train {

// Installs the handlers (process-wide; call once, after MPI is up so they are the last word).
void install_stop_handlers();
// The first SIGINT/SIGTERM received since install_stop_handlers (0: none).
int stop_signal();
// "SIGINT", "SIGTERM", or "signal N".
std::string signal_name(int signal);

}  // namespace dbs::train
