"""Shared by the python suite's tests: the skip rule, a bounded 2-rank run (under torchrun, or
started directly as srun starts ranks) and a dbs-scheduler serve on loopback.

Each test runs from the source root with PYTHONPATH=<build>/python and DBS_BUILD=<build>
(tests/meson.build). It exits 77 with the reason on its last line where the package or torch
is missing.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from ports import free_port  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TORCHRUN = "/usr/bin/torchrun"
# Debian 12's torchrun (torch 1.13 on Python 3.11) cannot parse its own default "--redirects 0
# --tee 0" (the flag enum lost its zero member in iteration): tee stdout instead, which keeps
# both streams on the console.
TORCHRUN_STD = ["--redirects", "1", "--tee", "1"]
# torchrun's agent looks at its ranks every --monitor_interval seconds (default 5) and returns
# only at such a look, so a run of a few seconds lasts until the next multiple of 5 s, and a
# rank that failed is seen up to 5 s late. The tests poll every 0.2 s instead, also for the
# torchrun lines they run as written (the guide's): PET_MONITOR_INTERVAL is that option's
# environment variable.
MONITOR_INTERVAL_S = "0.2"
os.environ.setdefault("PET_MONITOR_INTERVAL", MONITOR_INTERVAL_S)
# meson ends a test past its timeout with SIGTERM: exit through the finally blocks that kill
# the sessions the test started, so no rank or torchrun agent outlives it (one left holding
# --standalone's port 29400 would capture the next test's rendezvous).
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
BUILD = os.environ.get("DBS_BUILD", os.path.join(ROOT, "build"))
SCHEDULER = os.path.join(BUILD, "scheduler", "dbs-scheduler")


def skip_unless_ready():
    """Exits 77 unless dbs (with its extension) and torch import here."""
    try:
        import torch  # noqa: F401
    except ImportError as e:
        print(f"skip: torch is not importable by {sys.executable} ({e}); "
              "apt-get install python3-torch")
        sys.exit(77)
    try:
        import dbs.torch  # noqa: F401
    except ImportError as e:
        print(f"skip: the dbs package is not built ({str(e).splitlines()[0]})")
        sys.exit(77)
    if not os.path.exists(TORCHRUN):
        print(f"skip: {TORCHRUN} is missing (python3-torch)")
        sys.exit(77)


def torchrun(script, *args, nproc=2, timeout=240, started=None):
    """Runs `script args` on nproc local ranks (1 thread each); returns (returncode, stdout,
    stderr). A run past `timeout` seconds fails the test: a hang is a failure, never a wait.
    started(popen), when given, runs once the ranks are starting (the run goes on meanwhile;
    its output is read after it returns)."""
    logs = tempfile.mkdtemp(prefix="dbs-torchrun-")
    # Not --standalone: its rendezvous is always localhost:29400, so a second torchrun on the
    # machine would join the first one's store and fail when that run ends.
    cmd = [TORCHRUN, "--nnodes", "1", "--master_addr", "127.0.0.1", "--master_port",
           str(free_port()), "--nproc_per_node", str(nproc),
           *TORCHRUN_STD, "--monitor_interval", MONITOR_INTERVAL_S, "--log_dir", logs, script,
           *map(str, args)]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    # Output to files, not pipes: nothing blocks the ranks while started() runs.
    stdout, stderr = tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")
    p = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=stdout, stderr=stderr, text=True,
                         start_new_session=True)
    deadline = time.monotonic() + timeout
    try:
        if started:
            started(p)
        p.wait(timeout=max(1.0, deadline - time.monotonic()))
    except BaseException as e:
        try:
            os.killpg(p.pid, signal.SIGKILL)  # torchrun and its ranks: the session it leads
        except ProcessLookupError:
            pass
        p.wait()
        if not isinstance(e, subprocess.TimeoutExpired):
            raise
        stderr.seek(0)
        fail(f"{' '.join(cmd)}: no end after {timeout} s (a hang)\n{stderr.read()}")
    finally:
        stdout.seek(0)
        stderr.seek(0)
        out, err = stdout.read(), stderr.read()
        stdout.close()
        stderr.close()
        shutil.rmtree(logs, ignore_errors=True)
    return p.returncode, out, err


def ranks(script, *args, nproc=2, timeout=240):
    """Runs `script args` on nproc local ranks (1 thread each) started directly, one python
    process per rank as srun starts them, with torchrun's environment (RANK, WORLD_SIZE,
    LOCAL_RANK, MASTER_ADDR, MASTER_PORT): the same ranks as torchrun() without its agent
    process (an import of torch more per run). Returns (returncode, stdout, stderr), the
    ranks' output in rank order; returncode is 0 when every rank exited 0, else the first
    failed rank's code, the others killed then, as torchrun kills them. A run past `timeout`
    seconds fails the test: a hang is a failure, never a wait."""
    port = str(free_port())
    files, procs = [], []
    try:
        for rank in range(nproc):
            env = dict(os.environ, OMP_NUM_THREADS="1", RANK=str(rank), WORLD_SIZE=str(nproc),
                       LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(nproc),
                       MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
            out, err = tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")
            files.append((out, err))
            procs.append(subprocess.Popen([sys.executable, "-u", script, *map(str, args)],
                                          cwd=ROOT, env=env, stdout=out, stderr=err, text=True,
                                          start_new_session=True))
        deadline, returncode = time.monotonic() + timeout, None
        while returncode is None:
            codes = [p.poll() for p in procs]
            failed = [c for c in codes if c not in (None, 0)]
            if failed:
                returncode = failed[0]
            elif all(c == 0 for c in codes):
                returncode = 0
            elif time.monotonic() > deadline:
                break
            else:
                time.sleep(0.05)
    finally:
        for p in procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)  # the rank and anything it started
                except ProcessLookupError:
                    pass
            p.wait()
        texts = []
        for out, err in files:
            out.seek(0)
            err.seek(0)
            texts.append((out.read(), err.read()))
            out.close()
            err.close()
    stdout, stderr = "".join(o for o, _ in texts), "".join(e for _, e in texts)
    if returncode is None:
        fail(f"{script} {' '.join(map(str, args))} on {nproc} ranks: no end after {timeout} s "
             f"(a hang)\n{stderr}")
    return returncode, stdout, stderr


def train_worker(options, timeout=180):
    """worker.py train with `options` (a dict: worker.train's) on 2 ranks: the results rank 0
    and rank 1 saved (torch.load)."""
    import torch
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "train.pt")
        rc, _, stderr = ranks(os.path.join(ROOT, "tests/python/worker.py"), "train", out,
                              json.dumps(options), timeout=timeout)
        if rc != 0:
            fail(f"worker.py train {options} exit {rc}\n{stderr[-4000:]}")
        return [torch.load(f"{out}.{rank}") for rank in (0, 1)]


class Daemon:
    """dbs-scheduler serve on loopback ports of its choosing, with a token (600) and a state
    directory in `folder`: listen and http are its HOST:PORTs. kill() sends SIGKILL."""

    def __init__(self, folder):
        if not os.access(SCHEDULER, os.X_OK):
            fail(f"{SCHEDULER} is not built (DBS_BUILD={BUILD})")
        self.folder = folder
        os.makedirs(folder, exist_ok=True)
        self.token = os.path.join(folder, "token")
        with open(os.open(self.token, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            f.write(os.urandom(24).hex() + "\n")
        ready = os.path.join(folder, "ready.json")
        self.log = os.path.join(folder, "daemon.log")
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [SCHEDULER, "serve", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0",
                 "--token-file", self.token, "--state-dir", os.path.join(folder, "state"),
                 "--ready-file", ready], stdout=log, stderr=log)
        for _ in range(400):
            if os.path.exists(ready) and os.path.getsize(ready) > 0:
                address = json.load(open(ready))
                self.listen, self.http = address["listen"], address["http"]
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.025)
        self.kill()
        fail(f"dbs-scheduler serve did not start:\n{open(self.log).read()}")

    def job_key(self, job):
        """The file of `job`'s key (dbs-scheduler job-key), mode 600."""
        key = subprocess.run([SCHEDULER, "job-key", "--token-file", self.token, job],
                             check=True, capture_output=True, text=True).stdout
        path = os.path.join(self.folder, job + ".key")
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            f.write(key)
        return path

    def get(self, path, token=True):
        """GET http://<http><path> (with the daemon token as the bearer): the body as text."""
        request = urllib.request.Request(f"http://{self.http}{path}")
        if token:
            request.add_header("Authorization",
                               "Bearer " + open(self.token).read().strip())
        with urllib.request.urlopen(request, timeout=10) as r:
            return r.read().decode()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.kill()


def guide_blocks(page, test, fence="sh"):
    """The ```{fence} blocks of `page` (a path from the source root) whose "<!-- covered by:
    ... -->" note names `test` (e.g. tests/python/guide_test.py), in order."""
    lines = open(os.path.join(ROOT, page)).read().split("\n")
    blocks = []
    for i, line in enumerate(lines):
        if line.strip() != "```" + fence:
            continue
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        note = lines[k].strip() if k >= 0 else ""
        if note.startswith("<!-- covered by:") and test in note:
            end = lines.index("```", i + 1)
            blocks.append("\n".join(lines[i + 1:end]))
    return blocks


def python_block(page, name):
    """The ```python block of `page` that begins with the line "# NAME" (e.g. "# my_ddp.py")."""
    text = open(os.path.join(ROOT, page)).read()
    for block in text.split("```python\n")[1:]:
        block = block.split("```")[0]
        if block.split("\n", 1)[0].split(":")[0] == "# " + name:
            return block
    fail(f"{page} has no python block beginning with '# {name}'")


def shell(block, cwd, env, timeout=240):
    """Runs a shell block as a user's shell would (bash -euo pipefail) in cwd, in a session of
    its own: whatever it left running (a daemon started with &) is killed once bash ends.
    Returns (returncode, stdout, stderr); a block past `timeout` seconds fails the test with
    what it printed."""
    # Output to files, not pipes: a process left running holds them open after bash ends.
    stdout, stderr = tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")
    p = subprocess.Popen(["bash", "-euo", "pipefail", "-c", block], cwd=cwd, env=env, text=True,
                         stdout=stdout, stderr=stderr, start_new_session=True)
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        pass
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    hung = p.returncode is None
    p.wait()
    stdout.seek(0)
    stderr.seek(0)
    out, err = stdout.read(), stderr.read()
    stdout.close()
    stderr.close()
    if hung:
        fail(f"no end after {timeout} s (a hang):\n{block}\n{out[-2000:]}\n{err[-3000:]}")
    return p.returncode, out, err


def user_env(home):
    """The environment of a user's shell that sourced this build's dbs-env.sh as the PyTorch
    guide says (from another folder than the checkout), with HOME at `home`: no PYTHONPATH
    of the test's own, torch on 1 thread."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DBS_ROOT")}
    env.update(HOME=home, OMP_NUM_THREADS="1")
    source = f". {os.path.join(BUILD, 'dbs-env.sh')} && env -0"
    out = subprocess.run(["bash", "-c", source], env=env, cwd=home, capture_output=True,
                         check=True).stdout.decode()
    return dict(item.split("=", 1) for item in out.split("\0") if "=" in item)


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)
    print(f"ok: {message}")
