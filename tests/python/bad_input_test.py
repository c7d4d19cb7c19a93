"""Bad input: one clear exception naming what is at fault and no hang of the other rank (each
case bounded by a timeout; train.py exits non-zero, the Balancer raises on every rank), for: a
plan whose world differs from WORLD_SIZE, ranks disagreeing on the settings, a dataset smaller
than the global batch, a fixed: spec of the wrong length, a --disturb rank outside the job, and
the package without its built extension. Every bad setting of the Balancer is one
dbs.ConfigError, also a ValueError; so are the calls out of order a converted script can make:
set_epoch of an epoch the run is not at (a resumed loop started at the saved epoch; the
message says to start at balancer.epoch), state_dict between an epoch's last step and its end,
a training step fed by DDP's own loader beside the Balancer (the message names
batch_sampler=balancer.sampler). The same with plans from a daemon (dbs-scheduler
serve on loopback), and what only the daemon path has: --scheduler (scheduler=) without --job,
a bad address, ranks naming different jobs, a job key missing on one rank only. The gradient
exchange's: average_every < 1, averaging with an option it cannot serve (rebalance_every not
a multiple of it, comm_hook, no LocalSGDOptimizer), average_after_epochs alone, ranks with
different hooks, a hook that
returns the wrong shape on one rank at the first step or at the second (after DDP rebuilt its
buckets), or no Future. (A daemon's
plan of another job, which raises dbs.PlanError on every rank, needs a fake daemon:
tests/python/daemon_test.py, case 3.)"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

harness.skip_unless_ready()

WORKER = os.path.join(harness.ROOT, "tests/python/worker.py")
TRAIN = os.path.join(harness.ROOT, "examples/pytorch/train.py")
SMALL = ["--epochs", "1", "--threads", "1", "--test-limit", "100"]

cases = [
    ("a dataset smaller than the global batch", [TRAIN, "--train-limit", "100", *SMALL],
     "the dataset has 100 samples, fewer than global_batch 128"),
    ("a fixed: spec of the wrong length",
     [TRAIN, "--policy", "fixed:100,20,8", "--train-limit", "256", *SMALL],
     "ConfigError: policy 'fixed:100,20,8': 3 sizes for 2 ranks"),
    ("a --disturb rank outside the job", [TRAIN, "--disturb", "rank=2,factor=3", *SMALL],
     "--disturb rank=2,factor=3: rank 2, the job has 2 ranks"),
    ("--average-every 0", [TRAIN, "--average-every", "0", *SMALL],
     "--average-every 0: expected >= 1"),
    ("--comm-hook with --average-every",
     [TRAIN, "--average-every", "4", "--comm-hook", "fp16", *SMALL],
     "--comm-hook fp16 with --average-every: local steps exchange no gradient"),
]


def run_cases(cases):
    for what, args, message in cases:
        rc, _, stderr = harness.ranks(*args, timeout=120)
        harness.check(rc != 0 and message in stderr,
                      f"{what}: exit {rc}, stderr names it: {message!r}"
                      + ("" if message in stderr else f"\n--- stderr:\n{stderr[-3000:]}"))


def worker_cases(mode, *args, timeout=180):
    """worker.py MODE ARGS on 2 ranks, which must end well (each case raised on both ranks):
    its stdout."""
    rc, stdout, stderr = harness.ranks(WORKER, mode, *args, timeout=timeout)
    harness.check(rc == 0, f"worker.py {mode}: exit {rc}"
                  + ("" if rc == 0 else f"\n{stdout[-2000:]}\n{stderr[-3000:]}"))
    return stdout


def check_each(stdout, expected, where):
    """worker.py's lines "CASE: Type: message" (one per rank and case): for every (case,
    message) of `expected`, both ranks raised it."""
    for case, message in expected:
        lines = [text for text in (re.sub(r"^\[[^]]*\]:", "", line)  # torchrun's [rankN]:
                                   for line in stdout.splitlines())
                 if text.startswith(case + ":")]
        harness.check(len(lines) == 2 and all(message in line for line in lines),
                      f"{case}{where} raises on both ranks: {message!r}"
                      + ("" if len(lines) == 2 else f"\n{stdout[-3000:]}"))


run_cases(cases)

# The Balancer's own checks, one after the other in one run (as with a daemon below): a plan of
# 3 ranks in a 2-rank run, ranks disagreeing on the global batch.
stdout = worker_cases("bad", timeout=120)
check_each(stdout, [
    ("world-plan", "ConfigError: dbs.torch: the state_dict's plan is for 3 ranks, WORLD_SIZE is 2"),
    ("disagree", "ConfigError: dbs.torch.Balancer: ranks disagree on the settings: rank 1 has "
                 "settings.global_batch=64"),
    ("small-dataset", "ConfigError: dbs.torch.Balancer: the dataset has 100 samples, fewer than "
                      "global_batch 128"),
    ("set-epoch", "ConfigError: dbs.torch: set_epoch(0) but the run is at epoch 1 (0-based; step "
                  "0 of 4): epochs run in order, each once; after load_state_dict the loop "
                  "starts at balancer.epoch"),
    ("state-before-end", "ConfigError: dbs.torch: state_dict after the last step of epoch 0 but "
                         "before its end: call balancer.end_epoch()"),
    ("loader-bypass", "ConfigError: dbs.torch: a training forward of step 0 of epoch 0, whose "
                      "samples the Balancer's sampler did not give: the DataLoader must take "
                      "them from it, DataLoader(dataset, batch_sampler=balancer.sampler)")], "")

# The exchange's cases in one run, each raising on both ranks (before training, or at the
# first or second step for what a hook returns).
stdout = worker_cases("bad-exchange", timeout=180)
check_each(stdout, [
    ("average-every-0", "ConfigError: dbs.torch.Balancer: average_every must be >= 1"),
    ("rebalance-in-period", "ConfigError: dbs.torch.Balancer: rebalance_every=6 is not a "
                            "multiple of average_every=4"),
    ("hook-with-averaging", "ConfigError: dbs.torch.Balancer: comm_hook with average_every"),
    ("average-optimizer-both", "ConfigError: dbs.torch.Balancer: average_optimizer 'both': "
                               "expected 'local' (each rank's own) or 'mean' (averaged)"),
    ("average-after-epochs-alone", "ConfigError: dbs.torch.Balancer: average_after_epochs=1 "
                                   "without average_every"),
    ("hook-disagree", "ranks disagree on the settings: rank 1 has exchange.comm_hook="
                      "'torch.distributed.algorithms.ddp_comm_hooks.default_hooks."
                      "fp16_compress_hook', rank 0 exchange.comm_hook=None"),
    ("wrong-shape", "<lambda> on rank 1, step 1, bucket 0: returned a tensor of shape [3] for a "
                    "bucket of shape [293]"),
    ("wrong-shape-later", "later on rank 0, step 2, bucket 0: returned a tensor of shape [586]"),
    ("not-a-future", "returned Tensor, not a torch.futures.Future"),
    ("no-wrapper", "ConfigError: dbs.torch: epoch 0 (0-based), step 1: "
                   "Balancer(average_every=2) averages the models after the optimizer's update: "
                   "wrap the optimizer")], "")

with tempfile.TemporaryDirectory(prefix="dbs-py-bad-") as tmp, harness.Daemon(tmp) as daemon:
    # train.py with a daemon: its own check, and one of the library's through the CLI.
    key = daemon.job_key("py-bad")
    run_cases([
        ("--scheduler without --job", [TRAIN, "--scheduler", daemon.listen, *SMALL],
         "ValueError: --scheduler needs --job ID"),
        ("a fixed: spec of the wrong length (daemon)",
         [TRAIN, "--policy", "fixed:100,20,8", "--train-limit", "256", "--scheduler",
          daemon.listen, "--job", "py-bad", "--token-file", key, *SMALL],
         "ConfigError: policy 'fixed:100,20,8': 3 sizes for 2 ranks"),
    ])
    # The Balancer's cases with a daemon, one after the other in one run: each raises on both
    # ranks, or the next one's collectives wait until the timeout.
    stdout = worker_cases("bad-daemon", daemon.listen, timeout=180)
    check_each(stdout, [
            ("world-plan", "ConfigError: dbs.torch: the state_dict's plan is for 3 ranks"),
            ("disagree", "ConfigError: dbs.torch.Balancer: ranks disagree on the settings: rank "
                         "1 has settings.global_batch=64"),
            ("small-dataset", "ConfigError: dbs.torch.Balancer: the dataset has 100 samples"),
            ("fixed-length", "ConfigError: policy 'fixed:100,20,8': 3 sizes for 2 ranks"),
            ("no-job", "ConfigError: dbs.torch.Balancer: scheduler needs job"),
            ("bad-address", "ConfigError: --scheduler 'localhost': no host or no port"),
            ("job-disagree", "ConfigError: dbs.torch.Balancer: ranks disagree on the settings: "
                             "rank 1 has job='py-bad-1', rank 0 job='py-bad-0'"),
            ("token-one-rank", "ConfigError: token file /nonexistent/job.key: No such file")],
        " with a daemon")
    lines = [line for line in stdout.splitlines() if "token-one-rank:" in line]
    harness.check(any("rank 1 could not make its planner: ConfigError: token file" in line
                      for line in lines),
                  "rank 0 names rank 1 and its missing job key")

with tempfile.TemporaryDirectory() as tmp:
    shutil.copytree(os.path.join(harness.ROOT, "python/dbs"), os.path.join(tmp, "dbs"),
                    ignore=shutil.ignore_patterns("*.cpp", "meson.build"))
    p = subprocess.run([sys.executable, "-c", "import dbs.torch"], cwd=tmp, text=True,
                       capture_output=True, env=dict(os.environ, PYTHONPATH=tmp), timeout=60)
    harness.check(p.returncode != 0 and "the extension module dbs._dbs is not built" in p.stderr,
                  "import dbs without the built extension: ImportError saying how to build it")
