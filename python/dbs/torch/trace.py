"""The trace of a DDP job: dbs-agent's trace format (docs/reference/trace-format.md), written by
rank 0 through the library's trace writer (dbs._dbs.TraceWriter), so that
`dbs-scheduler replay` reads it as it reads the agent's.

Per epoch it holds the plan the epoch ran, every rank's report (rank record: samples, compute_s,
comm_s, the work times per batch size), every rank's timing record, the eval record (the epoch's
wall time), then the plan of the next epoch; re-plans inside an epoch as plan records with their
step. What dbs.torch measures goes into the timing record as follows: `compute` is forward +
backward (and an injected slowdown, also in `sleep_s`), `allreduce` the gradient allreduce with
the wait for the other ranks, `update` the rest of each step's work (the optimizer update,
loading the batch and the loop's own code: dbs.torch sees them as one; `gather` stays 0), and
`busy_s` the work, all wall seconds (no per-phase CPU time); `wall_s` and `process_cpu_s` run
from the opening of the epoch's first step to the end of its last allreduce. A rank whose cgroup
has a CPU quota or was ever throttled also gets, per epoch, a cpu record (its quota, the quota's
period, its cumulative throttling) and its timing record the quota and the throttling since the
previous epoch's end (or the trace's opening), as dbs-agent writes them: replay runs a rank held
below its threads in the quota's periods.

Every method is called on every rank alike (the collectives say so); only rank 0 writes.
"""

import errno
import json
import os
import socket

import torch
import torch.distributed as dist

import dbs
from dbs import _dbs


class Recorder:
    """The trace of rank 0's `path`; None or "" on rank 0: no trace (the other ranks' paths are
    not used). The constructor only checks that the file can be written (ConfigError on every
    rank, naming it, before anything is written); open() writes the header."""

    def __init__(self, path, group=None):
        self.group = group
        self.rank = dist.get_rank(group)
        self.world = dist.get_world_size(group)
        self._writer = None
        mine = (str(path or ""), _writable(str(path or "")) if self.rank == 0 else "")
        every = [None] * self.world
        dist.all_gather_object(every, mine, group=group)
        self.path, error = every[0]
        if error:
            raise dbs.ConfigError(f"dbs.torch: trace {self.path} (written by rank 0): {error}")
        self.on = bool(self.path)
        self._cpu0 = None  # this rank's cpu_quota_state() at the last epoch's end

    def open(self, settings, plan, run, append=False):
        """Starts the trace: the header (settings, world, and `run`: what the recorder knows,
        merged into its config with the hosts of the ranks) and the plan of the first epoch; with
        append, continues the trace of a resumed run instead (nothing written here)."""
        if not self.on:
            return
        self._cpu0 = _dbs.cpu_quota_state()
        self.hosts = [None] * self.world
        dist.all_gather_object(self.hosts, socket.gethostname(), group=self.group)
        config = json.dumps(dict(run, hosts=self.hosts))

        def start():
            self._writer = _dbs.TraceWriter(self.path, settings, self.world, config,
                                            bool(append))
            if not append:
                self._writer.plan(plan, 0, "initial")
                self._writer.flush()
        self._on_rank0(start, dbs.ConfigError)

    def replan(self, plan, step, source="rebalance"):
        """A re-plan inside the epoch, after `step` steps (rank 0 writes it; no collective)."""
        if self._writer is not None:
            self._writer.plan(plan, int(step), source)

    def epoch(self, reports, timing, next_plan, source, replans=0):
        """The end of an epoch: every rank's report of it (dbs.Report, in rank order), this
        rank's timing (StepTimer.epoch()), the plan of the next epoch and where it came from;
        rank 0 writes the rank and timing records, the eval record and the next plan, then
        flushes. A write that fails (a full disk) raises dbs.InputError on every rank."""
        if not self.on:
            return
        cpu = _dbs.cpu_quota_state()
        mine = (timing, cpu, self._cpu0)
        self._cpu0 = cpu
        every = [None] * self.world
        dist.all_gather_object(every, mine, group=self.group)
        self._on_rank0(lambda: self._write_epoch(reports, every, next_plan, source, replans),
                       dbs.InputError)

    def _on_rank0(self, write, kind):
        """write() on rank 0; a dbs.Error of it raised as `kind` on every rank, so none waits."""
        error = ""
        if self.rank == 0:
            try:
                write()
            except dbs.Error as e:
                error = str(e)
        verdict = [None] * self.world
        dist.all_gather_object(verdict, error, group=self.group)
        if verdict[0]:
            raise kind(f"dbs.torch: trace {self.path} (written by rank 0): {verdict[0]}")

    def _write_epoch(self, reports, every, next_plan, source, replans):
        for rep in reports:
            self._writer.rank(rep, self.hosts[rep.rank])
        for r, (t, cpu, cpu0) in enumerate(every):
            quota = {}
            if cpu is not None:  # (cores, period_s, nr_throttled, throttled_s)
                before = cpu0 or (cpu[0], cpu[1], 0, 0.0)
                quota = dict(quota_cores=cpu[0], nr_throttled=max(0, cpu[2] - before[2]),
                             throttled_s=max(0.0, cpu[3] - before[3]))
            self._writer.timing(reports[r].epoch, r, steps=t["steps"], wall_s=t["wall_s"],
                                process_cpu_s=t["process_cpu_s"], compute_s=t["compute_s"],
                                allreduce_s=t["comm_s"],
                                update_s=max(0.0, t["work_s"] - t["compute_s"]),
                                sleep_s=t["sleep_s"], busy_s=t["work_s"], **quota)
        for r, (_, cpu, _) in enumerate(every):  # as dbs-agent: none on unlimited ranks
            if cpu is not None and (cpu[0] > 0 or cpu[2] > 0):
                self._writer.cpu(reports[r].epoch, r, host=self.hosts[r], quota_cores=cpu[0],
                                 nr_throttled=cpu[2], throttled_s=cpu[3], period_s=cpu[1])
        wall = max(t["wall_s"] for t, _, _ in every)
        self._writer.eval(reports, wall, [t["work_s"] for t, _, _ in every], int(replans))
        self._writer.plan(next_plan, 0, source)
        self._writer.flush()

    def close(self):
        """Closes rank 0's file (every epoch is flushed already)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None


def run_config(model, **known):
    """The header's description of a DDP job's run: dbs.torch as the recorder, the model's class
    and parameter count, torch's threads and version, and `known` (seed, epochs, ...)."""
    module = getattr(model, "module", model)
    return {"recorder": "dbs.torch", "model": type(module).__name__,
            "params": sum(p.numel() for p in module.parameters()),
            "threads": torch.get_num_threads(), "torch": torch.__version__, **known}


def _writable(path):
    """Why `path` cannot be written as a trace ("" when it can), as dbs-agent checks its
    --trace: its folder is made (like mkdir -p) and must be writable; nothing else is made."""
    if not path:
        return ""
    if os.path.isdir(path):
        return "is a folder, not a file"
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as e:
        return f"cannot create folder {folder}: {e.strerror or e}"
    if os.path.exists(path) and not os.access(path, os.W_OK):
        return f"cannot open it for writing: {os.strerror(errno.EACCES)}"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"folder {folder} is not writable"
    return ""
