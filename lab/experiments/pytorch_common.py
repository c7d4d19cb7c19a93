"""Shared by the PyTorch studies (pytorch_speed.py, pytorch_convergence.py): one bounded
torchrun job of examples/pytorch/train.py, the CPU cgroup that holds one rank to a quota, and
the figures of a run's summary over its steady epochs.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from ports import free_port  # noqa: E402 (the tests' one)

TRAIN = os.path.join(ROOT, "examples", "pytorch", "train.py")
RANK_WRAPPER = os.path.join(ROOT, "lab", "experiments", "pytorch_rank.sh")
TORCHRUN = "/usr/bin/torchrun"
V1_CPU = "/sys/fs/cgroup/cpu"
V2_ROOT = "/sys/fs/cgroup"
EXIT_GRACE_S = 60  # after the summary is written, the job's time to exit before it is killed


class StudyError(Exception):
    """A study cannot go on: bad options, a missing build, a failed run."""


class RendezvousFailed(StudyError):
    """torchrun's rendezvous failed before any training (worth another try)."""


def check_build(build):
    """The build's python folder (PYTHONPATH of the ranks); StudyError if it is not built."""
    py = os.path.join(build, "python")
    if not os.path.isdir(os.path.join(py, "dbs", "torch")):
        raise StudyError(f"no {py}/dbs/torch: build with -Dpython=enabled first")
    if not os.access(TORCHRUN, os.X_OK):
        raise StudyError(f"no {TORCHRUN} (apt-get install python3-torch)")
    return py


class CpuCgroup:
    """A CPU cgroup PREFIX<pid>-rank<r> beside this process's own, quota `cores` x the 100 ms
    period (cgroup v1 cpu controller, else v2 cpu.max); removed by close() once empty."""

    PERIOD_US = 100000

    def __init__(self, prefix, rank, cores):
        v1 = os.path.exists(os.path.join(V1_CPU, "cpu.cfs_quota_us"))
        parent = V1_CPU if v1 else V2_ROOT
        if not v1 and not os.path.exists(os.path.join(V2_ROOT, "cgroup.controllers")):
            raise StudyError(f"no CPU cgroup controller at {V1_CPU} (v1) or {V2_ROOT} (v2)")
        for line in open("/proc/self/cgroup"):
            _, controllers, path = line.rstrip("\n").split(":", 2)
            if (v1 and "cpu" in controllers.split(",")) or (not v1 and controllers == ""):
                parent += path.rstrip("/")
                break
        self.path = os.path.join(parent, f"{prefix}{os.getpid()}-rank{rank}")
        quota = round(cores * self.PERIOD_US)
        try:
            os.mkdir(self.path)
            if v1:
                self._write("cpu.cfs_period_us", self.PERIOD_US)
                self._write("cpu.cfs_quota_us", quota)
            else:
                self._write("cpu.max", f"{quota} {self.PERIOD_US}")
        except OSError as e:
            self.close()
            raise StudyError(f"cannot make the CPU cgroup {self.path}: {e} (needs root and a "
                             "writable cgroup file system)") from None

    def _write(self, name, value):
        with open(os.path.join(self.path, name), "w") as f:
            f.write(str(value))

    def close(self):
        for _ in range(50):  # the ranks' exit can lag their parent's by a moment
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.1)
        print(f"warning: could not remove the cgroup {self.path}", file=sys.stderr)


def train(build, world, args, *, quota=None, timeout=3600, log=None, tries=3):
    """train_once, tried again (up to `tries` times in all) where torchrun's rendezvous failed
    before any training (its port taken between free_port and torchrun's bind, or its store
    connection timed out on a loaded machine)."""
    for attempt in range(1, tries + 1):
        try:
            return train_once(build, world, args, quota=quota, timeout=timeout, log=log)
        except StudyError as e:
            if attempt == tries or not isinstance(e, RendezvousFailed):
                raise
            print(f"warning: torchrun's rendezvous failed, trying again: "
                  f"{str(e).splitlines()[-1]}", file=sys.stderr)


def train_once(build, world, args, *, quota=None, timeout=3600, log=None):
    """Runs train.py on `world` local ranks with `args` (a list; --summary is added) and returns
    its summary (a dict). quota: None or (rank, cores), that rank held to a CPU quota. A job
    that fails, or outlives `timeout` seconds, raises StudyError with its last lines; one that
    wrote its summary but does not exit within EXIT_GRACE_S is killed and its summary kept,
    marked "exit_killed"."""
    py = check_build(build)
    work = tempfile.mkdtemp(prefix="dbs-pytorch-")
    summary = os.path.join(work, "summary.json")
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=py)
    group = None
    if quota is not None:
        group = CpuCgroup("dbs-pytorch-", quota[0], quota[1])
        env.update(DBS_QUOTA_CGROUP=group.path, DBS_QUOTA_RANK=str(quota[0]))
    # Not --standalone: its store is on the fixed port 29400, shared by every torchrun of the
    # machine at the time, and dies with the first of them to end.
    cmd = [TORCHRUN, "--nnodes", "1", "--master_addr", "127.0.0.1", "--master_port",
           str(free_port()), "--nproc_per_node", str(world),
           "--redirects", "1", "--tee", "1", "--log_dir", os.path.join(work, "logs"),
           "--no_python", RANK_WRAPPER, TRAIN, *map(str, args), "--summary", summary]
    out = open(log or os.path.join(work, "log"), "w")
    killed = False
    try:
        p = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                             start_new_session=True)
        start, written = time.monotonic(), None
        while p.poll() is None:
            time.sleep(0.1)
            now = time.monotonic()
            if written is None and os.path.exists(summary):
                written = now
            if now - start > timeout or (written is not None and now - written > EXIT_GRACE_S):
                killed = written is not None
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        if p.returncode != 0 and not killed:
            with open(out.name) as f:
                lines = f.readlines()
            tail = "".join(lines[-8:])
            trained = any("epoch 1:" in line for line in lines)
            failed = RendezvousFailed if "Rendezvous" in tail and not trained else StudyError
            raise failed(f"train.py {' '.join(map(str, args))} on {world} ranks "
                             f"{'timed out' if p.returncode == -signal.SIGKILL else 'failed'} "
                             f"(exit {p.returncode}); its last lines:\n{tail}")
        with open(summary) as f:
            result = json.load(f)
        if killed:
            result["exit_killed"] = True
        return result
    except KeyboardInterrupt:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        raise
    finally:
        out.close()
        if group is not None:
            group.close()
        subprocess.run(["rm", "-rf", work], check=False)


def steady(summary, first):
    """Figures of the epochs from `first` (1-based) on: mean wall s, mean busy-ideal s, mean
    work s of the slowest rank, plan changes (a changed batch at an epoch's start, and
    in-epoch re-plans)."""
    epochs = summary["epochs"]
    rows = [e for e in epochs if e["epoch"] >= first]
    if not rows:
        raise StudyError(f"no epoch from {first} on in a run of {len(epochs)} epochs")
    changes = 0
    for k, e in enumerate(epochs):
        if e["epoch"] >= first:
            changes += e.get("replans", 0) + (k > 0 and epochs[k - 1]["batch"] != e["batch"])
    wall = sum(e["wall_s"] for e in rows) / len(rows)
    ideal = sum(e["busy_ideal_s"] for e in rows) / len(rows)
    # The slowest rank's work seconds (busy_s: loading, forward + backward, the optimizer step);
    # a record without busy_s (forward + backward timing) has its share b_i / B of the samples
    # over its throughput instead.
    n = summary["train_samples"]
    slowest = sum(max(e["busy_s"]) if "busy_s" in e else
                  max(b / sum(e["batch"]) * n / v if v > 0 else 0.0
                      for b, v in zip(e["batch"], e["throughput"])) for e in rows) / len(rows)
    return {"steady_epoch_s": wall, "steady_busy_ideal_s": ideal, "plan_changes": changes,
            "steady_epochs": len(rows), "steady_slowest_work_s": slowest}


def write_jsonl(path, study, records, replace=None):
    """Replaces the records of `study` in the JSON lines file `path` (those of other studies
    stay; with `replace`, only the study's records for which replace(record) is true) at once,
    through a .tmp file renamed over it: nothing half-written."""
    kept = []
    if os.path.exists(path):
        try:
            with open(path) as f:
                kept = [r for r in (json.loads(line) for line in f if line.strip())
                        if r.get("study") != study or (replace is not None and not replace(r))]
        except (OSError, ValueError) as e:
            raise StudyError(f"{path}: cannot read its records: {e}") from None
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        for r in kept + records:
            f.write(json.dumps(r, sort_keys=True) + "\n")
    os.replace(tmp, path)


def read_jsonl(path, study):
    """The records of `study` in `path`; StudyError when it cannot be read or has none."""
    try:
        with open(path) as f:
            records = [r for r in (json.loads(line) for line in f if line.strip())
                       if r.get("study") == study]
    except (OSError, ValueError) as e:
        raise StudyError(f"{path}: cannot read it: {e}") from None
    if not records:
        raise StudyError(f"{path}: no {study} records")
    return records


def main(prog, study_name, options, study, report, argv):
    """A study script's command: run the study (or read its records with --report FILE), print
    its tables; a StudyError is one line on stderr and exit 1."""
    o = options(argv)
    try:
        report(read_jsonl(o.report, study_name) if o.report else study(o))
    except StudyError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 1
    return 0
