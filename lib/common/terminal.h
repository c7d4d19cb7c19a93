// Whether the output of this job reaches a terminal.
#pragma once

namespace dbs {

// True when what this process writes to stdout ends up on a terminal. Alone, that is
// isatty(stdout). A rank started by a launcher (mpirun, srun: OMPI_COMM_WORLD_SIZE, PMIX_RANK,
// PMI_RANK or SLURM_PROCID is set) writes into a pseudo-terminal or pipe the launcher reads, so
// there it is whether the launcher's own stdout is a terminal: the nearest ancestor process named
// mpirun, mpiexec, orterun, prterun or srun is looked up in /proc. A rank with no such ancestor
// on its host (started by orted or slurmstepd on another node) answers false.
bool job_output_is_terminal();

}  // namespace dbs
