"""Rank and world of a DDP process, as the launcher gives them.

torchrun sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT; Slurm's srun sets
SLURM_PROCID, SLURM_NTASKS and SLURM_LOCALID (the job script exports MASTER_ADDR and
MASTER_PORT, see examples/pytorch/train.sbatch). torchrun's variables win when both are set.
"""

import os
import threading
import time

import torch.distributed as dist

import dbs


def _env_int(names):
    for name in names:
        value = os.environ.get(name)
        if value is not None:
            try:
                return int(value), name
            except ValueError:
                raise dbs.ConfigError(f"dbs.torch: environment variable {name}={value!r} is not an "
                                 "integer") from None
    return None, None


def ranks():
    """(rank, world_size, local_rank) from torchrun's or srun's environment; (0, 1, 0) alone.
    dbs.ConfigError for a variable that is not an integer, or a rank outside the world."""
    rank, rank_from = _env_int(["RANK", "SLURM_PROCID"])
    world, world_from = _env_int(["WORLD_SIZE", "SLURM_NTASKS"])
    local, _ = _env_int(["LOCAL_RANK", "SLURM_LOCALID"])
    if rank is None and world is None:
        return 0, 1, 0
    if rank is None or world is None:
        raise dbs.ConfigError(f"dbs.torch: {rank_from or world_from} is set but not "
                         f"{'WORLD_SIZE/SLURM_NTASKS' if world is None else 'RANK/SLURM_PROCID'}")
    if world < 1 or not 0 <= rank < world:
        raise dbs.ConfigError(f"dbs.torch: {rank_from}={rank} is not a rank of "
                         f"{world_from}={world}")
    return rank, world, local if local is not None else 0


def init_process_group(backend="gloo", **kwargs):
    """dist.init_process_group with the rank and world of torchrun or srun; returns
    (rank, world_size, local_rank). Under srun, MASTER_ADDR and MASTER_PORT must be set
    (dbs.ConfigError otherwise)."""
    rank, world, local = ranks()
    if world > 1 or "MASTER_ADDR" in os.environ:
        for name in ("MASTER_ADDR", "MASTER_PORT"):
            if name not in os.environ:
                raise dbs.ConfigError(f"dbs.torch: {name} is not set (torchrun sets it; under srun "
                                 "the job script exports it)")
    else:  # one process without a launcher
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29500")
    dist.init_process_group(backend, rank=rank, world_size=world, **kwargs)
    return rank, world, local


def _another_thread_runnable():
    """Whether a thread of this process other than the caller is runnable (state R in Linux's
    /proc/self/task). Raises OSError where /proc cannot tell."""
    me = threading.get_native_id()
    for tid in os.listdir("/proc/self/task"):
        if int(tid) == me:
            continue
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "R":
                    return True
        except OSError:
            pass  # the thread ended
    return False


def _wait_threads_settled(limit_s=2.0, looks=3, pause_s=0.002):
    """Sleeps, the GIL released, until no other thread of this process has been runnable for
    `looks` looks in a row, at most limit_s seconds (limit_s / 10 where /proc cannot tell)."""
    deadline = time.monotonic() + limit_s
    quiet = 0
    while quiet < looks and time.monotonic() < deadline:
        time.sleep(pause_s)
        try:
            quiet = 0 if _another_thread_runnable() else quiet + 1
        except OSError:
            time.sleep(limit_s / 10)
            return


def destroy_process_group():
    """dist.destroy_process_group after a barrier of all ranks: call it once training is done.

    Without what it does first the process can hang at exit with torch 1.13: a gloo worker
    thread that ran one of the last collectives (an all_gather_object whose tensors Python
    made and has already dropped) still holds that work, and freeing the work's tensors needs
    the GIL. When the main thread, holding the GIL, destroys the process group (the DDP
    model's Reducer keeps it, so when the model is freed) and joins the group's threads,
    neither thread moves. So: a barrier (every rank's collectives are done), then a wait, the
    GIL released, until no other thread of the process is runnable (a worker that still has a
    work to free is runnable, or waits for the GIL and gets it while this one sleeps), then
    torch's destroy_process_group."""
    dist.barrier()
    _wait_threads_settled()
    dist.destroy_process_group()
