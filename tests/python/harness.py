"""Shared by the python suite's tests: the skip rule and a bounded 2-rank torchrun.

Each test runs from the source root with PYTHONPATH=<build>/python (tests/meson.build). It
exits 77 with the reason on its last line where the package or torch is missing.
"""

import os
import shutil
import signal
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TORCHRUN = "/usr/bin/torchrun"
# Debian 12's torchrun (torch 1.13 on Python 3.11) cannot parse its own default "--redirects 0
# --tee 0" (the flag enum lost its zero member in iteration): tee stdout instead, which keeps
# both streams on the console.
TORCHRUN_STD = ["--redirects", "1", "--tee", "1"]


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


def torchrun(script, *args, nproc=2, timeout=240):
    """Runs `script args` on nproc local ranks (1 thread each); returns (returncode, stdout,
    stderr). A run past `timeout` seconds fails the test: a hang is a failure, never a wait."""
    logs = tempfile.mkdtemp(prefix="dbs-torchrun-")
    cmd = [TORCHRUN, "--standalone", "--nnodes", "1", "--nproc_per_node", str(nproc),
           *TORCHRUN_STD, "--log_dir", logs, script, *map(str, args)]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    p = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)  # torchrun and its ranks: the session it leads
        out, err = p.communicate()
        fail(f"{' '.join(cmd)}: no end after {timeout} s (a hang)\n{err}")
    finally:
        shutil.rmtree(logs, ignore_errors=True)
    return p.returncode, out, err


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)
    print(f"ok: {message}")
