"""examples/pytorch/train.py planned by dbs-scheduler serve, 2 ranks under torchrun:

1. through a daemon on loopback (token, job key, state directory): every plan after the initial
   one comes from the daemon (source "daemon"), the epochs ran the daemon's plans (its trace),
   the status page, /status and /metrics (with the bearer token) show the finished job with its
   epochs;
2. the daemon killed (SIGKILL) in the middle of a job: the job goes on with the embedded
   fallback, says so, and finishes all its epochs with its summary;
3. a daemon that answers with plans of another job (bad input, not an outage): train.py exits 2
   with dbs.PlanError naming both jobs and the daemon's address; a loop that catches it (on
   every rank, also where only rank 1 received such a plan) trains on with the embedded
   fallback's plans and finishes its epochs."""

import json
import os
import re
import socket
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

harness.skip_unless_ready()

TRAIN = os.path.join(harness.ROOT, "examples/pytorch/train.py")
WORKER = os.path.join(harness.ROOT, "tests/python/worker.py")
EPOCHS = 3


def train(tmp, name, *args, epochs=EPOCHS, samples=1000, started=None):
    """train.py on 2 ranks: (stdout, stderr, summary); a failed run fails the test."""
    summary = os.path.join(tmp, name + ".json")
    start = time.monotonic()
    rc, out, err = harness.torchrun(TRAIN, "--epochs", epochs, "--train-limit", samples,
                                    "--test-limit", 100, "--threads", 1, "--summary", summary,
                                    *args, timeout=240, started=started)
    print(f"{name}: {epochs} epochs in {time.monotonic() - start:.0f} s")
    if rc != 0:
        harness.fail(f"{name}: train.py exit {rc}\n{out[-2000:]}\n{err[-4000:]}")
    return out, err, json.load(open(summary))


def train_expecting_error(tmp, name, *args, epochs=EPOCHS, samples=1000):
    """train.py on 2 ranks that is to fail: (stdout, stderr, returncode)."""
    rc, out, err = harness.torchrun(TRAIN, "--epochs", epochs, "--train-limit", samples,
                                    "--test-limit", 100, "--threads", 1, *args, timeout=240)
    return out, err, rc


FOREIGN = [100, 28]  # the batch sizes of the other job's plan


class ForeignDaemon:
    """A fake daemon on loopback that answers a report with a plan of job 'someone-else': every
    rank's report of an epoch below rank1_only_from (1-based, as the protocol counts), from
    there on rank 1's only (rank 0 then gets no plan). reports: the report epochs received."""

    def __init__(self, rank1_only_from):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.address = "127.0.0.1:%d" % self.server.getsockname()[1]
        self.reports = []
        self.rank1_only_from = rank1_only_from
        threading.Thread(target=self.serve, daemon=True).start()

    def answer(self, conn):
        with conn, conn.makefile("r") as lines:
            for line in lines:
                m = json.loads(line)
                if m["type"] == "report":
                    self.reports.append(m["epoch"])
                    if m["epoch"] >= self.rank1_only_from and m["rank"] == 0:
                        continue
                    conn.sendall((json.dumps({
                        "v": 2, "type": "plan", "job": "someone-else", "epoch": m["epoch"] + 1,
                        "world": 2, "global_batch": 128, "predicted_epoch_s": 1.0,
                        "ideal_epoch_s": 1.0, "changed": False, "reason": "not yours",
                        "hash": "0123456789abcdef", "rank": m["rank"],
                        "batch": FOREIGN[m["rank"]], "offset": 100 * m["rank"],
                        "throughput": 1.0}) + "\n").encode())
                elif m["type"] == "goodbye":
                    conn.sendall(b'{"v":2,"type":"goodbye"}\n')

    def serve(self):
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self.answer, args=(conn,), daemon=True).start()

    def close(self):
        self.server.close()


def sources(out):
    """{epoch: source} of the 'plan of epoch N: [...] from SOURCE' lines of rank 0."""
    return {int(e): s for e, s in re.findall(r"plan of epoch (\d+): \[[\d, ]+\] from (\S+)", out)}


def plans(trace):
    """{epoch: batch} of the plan records in a daemon's trace of a job."""
    with open(trace) as f:
        return {r["epoch"]: r["batch"] for r in map(json.loads, f) if r["type"] == "plan"}


with tempfile.TemporaryDirectory(prefix="dbs-py-daemon-") as tmp:
    # 1. Planned by the daemon.
    with harness.Daemon(os.path.join(tmp, "a")) as daemon:
        job = "py-daemon"
        out, err, run = train(tmp, job, "--scheduler", daemon.listen, "--job", job,
                              "--token-file", daemon.job_key(job), "--scheduler-timeout", 60,
                              "--disturb", "rank=1,factor=2")
        harness.check(f"connected to the daemon at {daemon.listen}" in err,
                      "the ranks connected to the daemon")
        harness.check(sources(out) == {e: "daemon" for e in range(2, EPOCHS + 2)},
                      f"every epoch's next plan came from the daemon: {sources(out)}"
                      + ("" if "embedded policy" not in err else f"\n{err[-3000:]}"))
        harness.check(len(run["epochs"]) == EPOCHS and run["test_acc"] > 0,
                      f"the summary has {EPOCHS} epochs")
        daemon_plans = plans(os.path.join(daemon.folder, "state", "traces", job + ".jsonl"))
        ran = {e["epoch"]: e["batch"] for e in run["epochs"]}
        harness.check(all(daemon_plans[e] == ran[e] for e in ran)
                      and daemon_plans[EPOCHS + 1] == run["epochs"][-1]["next_batch"],
                      f"the epochs ran the daemon's plans: {ran}, daemon {daemon_plans}")
        # One plan may swing on a shared machine (one epoch's measured speeds); over the
        # daemon's plans the slow rank trains fewer samples.
        planned = [daemon_plans[e] for e in range(2, EPOCHS + 2)]
        harness.check(sum(b[1] for b in planned) < sum(b[0] for b in planned),
                      f"the daemon gave the slow rank 1 the smaller share of its plans: {planned}")
        status = [j for j in json.loads(daemon.get("/status"))["jobs"] if j["job"] == job]
        harness.check(len(status) == 1 and status[0]["state"] == "finished",
                      f"/status shows the job finished: {status}")
        page = daemon.get("/")
        harness.check(job in page and "<svg" in page, "the status page shows the job")
        metrics = daemon.get("/metrics")
        for want in (f'dbs_job_ranks{{job_id="{job}"}} 2',
                     f'dbs_job_epoch{{job_id="{job}"}} {EPOCHS}',
                     f'dbs_job_reports_total{{job_id="{job}"}} {2 * EPOCHS}',
                     f'dbs_job_state{{job_id="{job}",state="finished"}} 1'):
            harness.check(want in metrics, f"/metrics has {want}")

    # 2. The daemon killed with SIGKILL once it planned epoch 2: the job finishes on the
    # embedded fallback.
    with harness.Daemon(os.path.join(tmp, "b")) as daemon:
        job = "py-kill"
        trace = os.path.join(daemon.folder, "state", "traces", job + ".jsonl")

        def kill_after_plan_2(ranks):
            deadline = time.monotonic() + 180
            while time.monotonic() < deadline and ranks.poll() is None:
                if os.path.exists(trace) and 2 in plans(trace):
                    daemon.kill()
                    return
                time.sleep(0.05)
            harness.fail(f"the daemon did not plan epoch 2 while the job ran (exit {ranks.poll()})")

        out, err, run = train(tmp, job, "--scheduler", daemon.listen, "--job", job,
                              "--token-file", daemon.job_key(job), "--scheduler-timeout", 5,
                              started=kill_after_plan_2)
        harness.check(daemon.proc.returncode == -9, "the daemon was killed with SIGKILL")
        got = sources(out)
        order = [got.get(e) for e in range(2, EPOCHS + 2)]
        first_fallback = order.index("embedded-fallback") if "embedded-fallback" in order else -1
        harness.check(order[0] == "daemon" and first_fallback > 0
                      and set(order[first_fallback:]) == {"embedded-fallback"},
                      f"plans from the daemon until the kill, then the embedded fallback: {order}")
        harness.check("uses the embedded policy" in err,
                      "the ranks say the embedded policy planned")
        harness.check(len(run["epochs"]) == EPOCHS
                      and [e["epoch"] for e in run["epochs"]] == list(range(1, EPOCHS + 1))
                      and all(sum(e["batch"]) == 128 for e in run["epochs"]),
                      f"the job finished its {EPOCHS} epochs with a summary")

    # 3. A daemon that answers with plans of another job. train.py: both ranks raise
    # dbs.PlanError at the end of epoch 1 and exit 2 (torchrun 1), within the timeout.
    fake = ForeignDaemon(rank1_only_from=99)
    out, err, rc = train_expecting_error(tmp, "foreign", "--scheduler", fake.address, "--job",
                                         "py-foreign", "--scheduler-timeout", 30, epochs=2,
                                         samples=256)
    harness.check(fake.reports[:2] == [1, 1],
                  f"both ranks reported epoch 1 to the fake daemon: {fake.reports}")
    message = ("received a plan for job 'someone-else' from the daemon at "
               f"{fake.address}, this is job 'py-foreign'")
    raised = re.findall(r"train.py: rank (\d): PlanError: .*" + re.escape(message), err)
    harness.check(rc != 0 and raised, f"train.py fails with dbs.PlanError naming both jobs "
                  f"and the address: exit {rc}, {message!r}" + ("" if raised else f"\n{err[-3000:]}"))
    harness.check("plan of epoch 2" not in out and "epoch 2:" not in out,
                  "train.py stopped at the end of epoch 1")
    fake.close()

    # The same caught in the loop (worker.py foreign): epoch 1's plans are another job's on both
    # ranks, later epochs' on rank 1 only (rank 0 gets none and waits scheduler_timeout). Every
    # epoch end raises dbs.PlanError on both ranks with the same message, the embedded plan is
    # in force, and the run finishes its epochs.
    fake = ForeignDaemon(rank1_only_from=2)
    rc, stdout, stderr = harness.ranks(WORKER, "foreign", fake.address, EPOCHS, timeout=120)
    fake.close()
    message = ("received a plan for job 'someone-else' from the daemon at "
               f"{fake.address}, this is job 'py-foreign'")
    harness.check(rc == 0, f"worker.py foreign: exit {rc}"
                  + ("" if rc == 0 else f"\n{stdout[-2000:]}\n{stderr[-3000:]}"))
    for epoch in range(EPOCHS):
        first = 0 if epoch == 0 else 1
        raised = [line.split("]:", 1)[-1] for line in stdout.splitlines()
                  if f"epoch {epoch}: PlanError: " in line]
        want = (f"epoch {epoch}: PlanError: dbs.torch: end of epoch {epoch} (0-based): rank "
                f"{first} {message}")
        harness.check(len(raised) == 2 and all(line.startswith(want) for line in raised)
                      and raised[0] == raised[1],
                      f"epoch {epoch}: both ranks raise the same dbs.PlanError: {want!r}"
                      + ("" if len(raised) == 2 else f"\n{stdout[-3000:]}"))
        planned = re.findall(rf"epoch {epoch}: (\S+) \[(\d+), (\d+)\]", stdout)
        harness.check(len(planned) == 2 and all(s == "embedded-fallback"
                                                and int(a) + int(b) == 128
                                                and [int(a), int(b)] != FOREIGN
                                                for s, a, b in planned),
                      f"epoch {epoch}: the embedded fallback's plan is in force: {planned}")
    harness.check(stdout.count(f"finished {EPOCHS} epochs") == 2,
                  f"both ranks caught it and finished their {EPOCHS} epochs")
