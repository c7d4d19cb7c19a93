#!/usr/bin/python3
"""The scale study: dbs on emulated clusters of 16, 64 and 256 ranks on this machine.

    lab/experiments/scale.py [--build DIR] [--out FILE] [--ranks 16,64,256] [--runs LIST]
    lab/experiments/scale.py --replay-only      # replay the recorded traces again
    lab/experiments/scale.py --report FILE      # the tables of recorded results

Each cluster is a committed spec, traces/scale-{16,64,256}.json: N/4 ranks of each of four node types at
1, 0.75, 0.5 and 0.25 of the fastest, 5% per-step noise, the second type slowed 2x from epoch 5
of 8, a small gradient (10,000 parameters). dbs-agent --model synthetic emulates it under mpirun
(oversubscribed, sleeping waits): every rank waits its step's cost, and the exchange, planner,
daemon client, trace and checkpoint are the real ones. Per size, the runs (--runs) are:

  static       the equal split (--policy static)
  dbs          dbs, planned by the embedded policy
  daemon       dbs, planned by dbs-scheduler serve (on loopback)
  best-before  the best split for the spec's speeds before the slowdown (--policy fixed:...),
  best-after   and after it: 3 epochs each of the spec with its slowdown dropped or from the start
  kill         dbs through the daemon, the daemon killed (SIGKILL) after epoch --kill-after: the
               embedded fallback must plan the rest and the run end with every epoch
  collective   no training: dbs-bench allreduce times one allgather of a rank's 424 bytes of figures
               among the N processes, waiting as MPI's blocking call does (spin) and as the
               emulated agents do (sleep): what one collective of the control plane costs on
               this machine whatever dbs does around it

The spec's speeds are read from `dbs-scheduler replay --synthesize` of the spec (its rank
records: the one parser of the spec format). The figures, per size and phase (before: the
epochs whose plan was made before the slowdown; after: those made after it; epochs 2-4 and 6-8):

  ratio        dbs's mean epoch over the best-split run's (its epochs 2-3): target <= 1.05
  plan ratio   the expected compute time of a step under dbs's plans over that under the best
               split, for the spec's speeds and noise (Monte Carlo: what machine load cannot move)
  gain         static's mean epoch over dbs's, against the bound sum(v) / (n min v): target
               >= 0.95 of it where the exchange is small
  plan gain    the same for the compute alone: the expected compute time of a step under the
               equal split over that under dbs's plans (Monte Carlo, as the plan ratio): the gain
               with no exchange
  changes      dbs's plan changes after its first (the balancing one): target <= 1 (one slowdown)
  replay       the static run's trace replayed under dbs (dbs-scheduler replay --compare) against
               the dbs run's recorded total, and the reverse: target within 3%
  control      rank 0's control plane per epoch (the eval records' control: the allgather of the
               reports and the check, planning, the daemon's round trip): target at 256 ranks < 1% of
               a 10 s epoch; beside it the collective run's allgather

Records, one JSON line per run (study "scale"), go to --out at the end (replacing the records of
the same size and run; the others stay), and to --out.part as each run ends; a study started again
continues from --out.part (delete it to start afresh). Run logs, traces and summaries stay in
--logs; the static and dbs runs' traces, which the replay figures come from, are copied to
--traces as N-RUN.jsonl, and --replay-only replays them again with --build (after a change to
replay: no runs, the other figures stay). Exits 1 where a run fails. About 35 minutes for the
three sizes on an idle machine.
"""
import argparse
import json
import math
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_common as pc  # noqa: E402  (StudyError, the records' file, main)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STUDY = "scale"
RUNS = ("static", "dbs", "daemon", "best-before", "best-after", "kill", "collective")
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none"]
REPORT_BYTES = 424  # a rank's figures in the epoch end's allgather: report, timing, CPU, check, end, share
TARGET_RATIO, TARGET_GAIN, TARGET_CHANGES, TARGET_CONTROL = 1.05, 0.95, 1, 0.01
IMPROPER = re.compile(r"mpirun has exited due to process rank \d+ with PID \d+ on\s+node \S+ exiting improperly")
PACE = re.compile(r"^emulation: (\d+) steps on (\d+) ranks; asked ([0-9.]+) s, took ([0-9.]+) s "
                  r"\(([-+0-9.]+)%\); wake-ups late by (\d+) us a step \(the latest rank (\d+) us\)",
                  re.M)


def options(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter,
                                epilog="example: lab/experiments/scale.py --ranks 16 --runs static,dbs "
                                       "--out out/scale.jsonl")
    p.add_argument("--build", default="build", help="the meson build")
    p.add_argument("--out", default="docs/results/scale.jsonl", help="the records (JSON lines)")
    p.add_argument("--report", default="", metavar="FILE",
                   help="print the tables of FILE's records and exit (no runs)")
    p.add_argument("--ranks", default=argparse.SUPPRESS,
                   help="cluster sizes: traces/scale-N.json each (default 16,64,256; with --replay-only, all)")
    p.add_argument("--runs", default=",".join(RUNS), help="comma list of " + ", ".join(RUNS))
    p.add_argument("--kill-ranks", default="256", help="sizes that make the kill run")
    p.add_argument("--kill-after", type=int, default=4, help="epoch after which the kill run's daemon dies")
    p.add_argument("--logs", default="", help="run logs, traces and summaries (default: a temporary folder)")
    p.add_argument("--traces", default=os.path.join(ROOT, "traces", "scale"),
                   help="where the static and dbs runs' traces are kept (N-RUN.jsonl)")
    p.add_argument("--replay-only", action="store_true",
                   help="no runs: replay the traces of --out's static and dbs records again with --build")
    p.add_argument("--scheduler-timeout", type=float, default=30,
                   help="the agents' --scheduler-timeout: the first epoch end after the kill waits it")
    p.add_argument("--specs", default=os.path.join(ROOT, "traces"), help="the folder of the scale-N.json specs")
    p.add_argument("--timeout", type=int, default=1800, help="seconds a run may take")
    o = p.parse_args(argv)
    o.ranks_given = hasattr(o, "ranks")
    try:
        o.ranks = [int(n) for n in getattr(o, "ranks", "16,64,256").split(",") if n]
        o.kill_ranks = [int(n) for n in o.kill_ranks.split(",") if n]
    except ValueError:
        p.error("--ranks and --kill-ranks take comma lists of numbers")
    o.runs = [r for r in o.runs.split(",") if r]
    for r in o.runs:
        if r not in RUNS:
            p.error(f"--runs: '{r}' is not one of {', '.join(RUNS)}")
    for n in o.ranks:
        if not os.path.exists(spec_path(o, n)):
            p.error(f"--ranks {n}: no spec {spec_path(o, n)}")
    if o.kill_after < 1 or o.timeout < 1:
        p.error("--kill-after and --timeout must be >= 1")
    return o


def shown(path):
    """path from the repository's root when it is inside it."""
    rel = os.path.relpath(path, ROOT)
    return path if rel.startswith("..") else rel


def spec_path(o, n):
    return os.path.join(o.specs, f"scale-{n}.json")


def commit():
    try:
        return subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def read_trace(path):
    try:
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError) as e:
        raise pc.StudyError(f"{path}: cannot read the trace: {e}") from None


def spec_speeds(build, spec, scratch):
    """[epoch][rank] samples/s the spec gives (slowdowns in), from replay --synthesize."""
    out = os.path.join(scratch, os.path.basename(spec) + ".synth.jsonl")
    sched = os.path.join(build, "scheduler", "dbs-scheduler")
    try:
        r = subprocess.run([sched, "replay", "--synthesize", spec, "-o", out], capture_output=True, text=True)
    except OSError as e:
        raise pc.StudyError(f"cannot run {sched}: {e}") from None
    if r.returncode != 0:
        raise pc.StudyError(f"replay --synthesize {spec}: {r.stderr.strip()}")
    lines = read_trace(out)
    world = lines[0]["config"]["world"]
    epochs = lines[0]["config"]["epochs"]
    speeds = [[0.0] * world for _ in range(epochs)]
    for rec in lines:
        if rec["type"] == "rank":
            speeds[rec["epoch"] - 1][rec["rank"]] = rec["throughput"]
    return speeds


def slowdown_epoch(spec):
    """The epoch (from 1) the spec's one slowdown starts."""
    starts = {d.get("from", 1) for d in spec.get("disturbances", [])}
    if len(starts) != 1 or int(list(starts)[0]) != list(starts)[0]:
        raise pc.StudyError("the scale specs have one slowdown, starting at an epoch's start")
    return int(starts.pop())


def best_split(v, total):
    """total samples in proportion to the speeds v, rounded by largest remainder."""
    share = [total * x / sum(v) for x in v]
    b = [int(s) for s in share]
    for i in sorted(range(len(v)), key=lambda i: b[i] - share[i])[:total - sum(b)]:
        b[i] += 1
    return b


class Daemon:
    """dbs-scheduler serve on loopback with a token and one job's key."""

    def __init__(self, build, scratch, job):
        sched = os.path.join(build, "scheduler", "dbs-scheduler")
        self.token = os.path.join(scratch, "token")
        self.key = os.path.join(scratch, job + ".key")
        ready = os.path.join(scratch, job + ".ready.json")
        old = os.umask(0o077)
        try:
            with open(self.token, "w") as f:
                f.write(os.urandom(24).hex() + "\n")
            with open(self.key, "w") as f:
                subprocess.run([sched, "job-key", "--token-file", self.token, job], stdout=f, check=True)
            self.log = open(os.path.join(scratch, job + ".daemon.log"), "w")
            # At 256 ranks the reports of an epoch may arrive seconds apart on a loaded machine:
            # the daemon waits for all of them (the study judges plans made from every report).
            self.proc = subprocess.Popen([sched, "serve", "--listen", "127.0.0.1:0", "--token-file", self.token,
                                          "--ready-file", ready, "--report-timeout", "120",
                                          "--idle-timeout", "1200"], stdout=self.log, stderr=subprocess.STDOUT)
        except (OSError, subprocess.CalledProcessError) as e:
            raise pc.StudyError(f"cannot start {sched}: {e}") from None
        finally:
            os.umask(old)
        for _ in range(400):
            if os.path.exists(ready) and os.path.getsize(ready) > 0:
                break
            if self.proc.poll() is not None:
                raise pc.StudyError(f"the daemon exited {self.proc.returncode} before it listened")
            time.sleep(0.05)
        else:
            self.stop()
            raise pc.StudyError("the daemon did not listen within 20 s")
        with open(ready) as f:
            self.listen = json.load(f)["listen"]

    def kill(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log.close()


def run_job(o, n, spec, name, policy, scratch, daemon=None, kill_after=None):
    """One mpirun of n emulated ranks; returns its record."""
    base = os.path.join(scratch, f"{n}-{name}")
    trace, summary, log = base + ".trace.jsonl", base + ".summary.json", base + ".log"
    for f in (trace, summary):
        if os.path.exists(f):
            os.remove(f)
    agent = os.path.join(o.build, "agents", "dbs-agent")
    args = ["--model", "synthetic", "--cluster", spec, "--policy", policy, "--no-progress",
            "--trace", trace, "--summary", summary]
    env = dict(os.environ)
    mpi = MPIRUN + ["-np", str(n)]
    if daemon is not None:
        env["DBS_SCHEDULER"], env["DBS_TOKEN_FILE"] = daemon.listen, daemon.key
        mpi += ["-x", "DBS_SCHEDULER", "-x", "DBS_TOKEN_FILE"]
        args += ["--job", f"{n}-{name}", "--scheduler-timeout", str(o.scheduler_timeout)]
    cmd = mpi + [agent] + args
    print(f"scale: {n} ranks, {name}: {' '.join(cmd)}", file=sys.stderr, flush=True)
    load = os.getloadavg()[0]
    t0 = time.monotonic()
    killed_after = None
    with open(log, "w") as out:
        try:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        except OSError as e:
            raise pc.StudyError(f"cannot run mpirun: {e}") from None
        while proc.poll() is None:
            if time.monotonic() - t0 > o.timeout:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                raise pc.StudyError(f"{n} ranks, {name}: no end within {o.timeout} s; log {log}")
            if kill_after is not None and killed_after is None and os.path.exists(trace):
                with open(trace) as f:
                    evals = sum('"type":"eval"' in line for line in f)
                if evals >= kill_after:
                    daemon.kill()
                    killed_after = evals
            time.sleep(0.2)
    wall = time.monotonic() - t0
    with open(log) as f:
        text = f.read()
    summ = None
    if os.path.exists(summary):
        with open(summary) as f:
            summ = json.load(f)
    # mpirun may say a rank "exited improperly" once the job has finished (rank 0 wrote the summary
    # of every epoch and the emulation line): kept, with what mpirun said in the record.
    improper = IMPROPER.search(text)
    finished = summ is not None and len(summ["epochs"]) == summ["config"]["epochs"] and PACE.search(text)
    if proc.returncode != 0 and not (improper and finished):
        tail = "\n".join(text.splitlines()[-5:])
        raise pc.StudyError(f"{n} ranks, {name}: exit {proc.returncode}; the last lines of {log}:\n{tail}")
    lines = read_trace(trace)
    plans = {}
    for r in lines:
        if r["type"] == "plan" and r["step"] == 0:
            plans[r["epoch"]] = r  # the last one written for the epoch
    epochs = []
    for e in (r for r in lines if r["type"] == "eval"):
        k = e["epoch"]
        epochs.append({"epoch": k, "wall_s": e["wall_s"], "control": e["control"], "busy": e.get("busy"),
                       "batch": plans[k]["batch"], "source": plans[k]["source"],
                       "changed": plans[k]["changed"]})
    last = len(epochs)
    pace = PACE.search(text)
    if pace is None:
        raise pc.StudyError(f"{n} ranks, {name}: no emulation line in {log}")
    kept, predicted = None, None
    if name in ("static", "dbs"):
        os.makedirs(o.traces, exist_ok=True)
        kept = os.path.join(o.traces, f"{n}-{name}.jsonl")
        shutil.copyfile(trace, kept)
        predicted = replay_predictions(o, kept)
    return {
        "study": STUDY, "ranks": n, "run": name, "policy": policy, "spec": shown(spec),
        "replay": predicted, "trace": shown(kept) if kept else None,
        "command": " ".join(shown(c) if c.startswith(ROOT) else c for c in cmd),
        "epochs": epochs,
        "next": {"source": plans[last + 1]["source"], "changed": plans[last + 1]["changed"]}
        if last + 1 in plans else None,
        "epochs_done": len(summ["epochs"]), "killed_after": killed_after,
        "mpirun": {"exit": proc.returncode, "said": improper.group(0)} if proc.returncode != 0 else None,
        "pace": {"steps": int(pace.group(1)), "asked_s": float(pace.group(3)), "took_s": float(pace.group(4)),
                 "late_us": int(pace.group(6)), "latest_us": int(pace.group(7))},
        "wall_s": round(wall, 3), "load": round(load, 2), "cores": os.cpu_count(),
        "commit": commit(), "date": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }


def run_collective(o, n):
    """The collective run: dbs-bench allreduce's allgather of REPORT_BYTES a rank, n processes."""
    bench = os.path.join(o.build, "bench", "dbs-bench")
    if not os.access(bench, os.X_OK):
        raise pc.StudyError(f"no {bench}: build first")
    cmd = MPIRUN + ["-np", str(n), bench,
           "allreduce", "--sizes", str(REPORT_BYTES // 4), "--reps", "5", "--wait", "spin,sleep",
           "--exchange", "allgather"]
    print(f"scale: {n} ranks, collective: {' '.join(cmd)}", file=sys.stderr, flush=True)
    load = os.getloadavg()[0]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=o.timeout)
    except subprocess.TimeoutExpired:
        raise pc.StudyError(f"{n} ranks, collective: no end within {o.timeout} s") from None
    if p.returncode != 0:
        raise pc.StudyError(f"{n} ranks, collective: exit {p.returncode}: {p.stderr.strip()[-400:]}")
    try:
        size = json.loads(p.stdout)["sizes"][0]
        gather = size["communicator"]["allgather"]
        figures_ = {w: {"median_s": gather[w]["median_us"] / 1e6, "min_s": gather[w]["min_us"] / 1e6}
                    for w in ("spin", "sleep")}
    except (ValueError, KeyError, IndexError) as e:
        raise pc.StudyError(f"{n} ranks, collective: not dbs-bench allreduce's JSON ({e})") from None
    return {"study": STUDY, "ranks": n, "run": "collective", "bytes": REPORT_BYTES, "reps": 5,
            "allgather": figures_,
            "command": " ".join(shown(c) if c.startswith(ROOT) else c for c in cmd),
            "load": round(load, 2), "cores": os.cpu_count(), "commit": commit(),
            "date": time.strftime("%Y-%m-%dT%H:%M:%S")}


def replay_again(o):
    """--replay-only: each static and dbs record of --out with its trace replayed by --build."""
    records = pc.read_jsonl(o.out, STUDY)
    again = []
    for r in records:
        if r["run"] not in ("static", "dbs") or (o.ranks_given and r["ranks"] not in o.ranks):
            continue
        trace = r.get("trace") or shown(os.path.join(o.traces, f"{r['ranks']}-{r['run']}.jsonl"))
        path = trace if os.path.isabs(trace) else os.path.join(ROOT, trace)
        if not os.path.exists(path):
            raise pc.StudyError(f"{r['ranks']} ranks, {r['run']}: no trace {trace} to replay")
        print(f"scale: {r['ranks']} ranks, {r['run']}: replaying {trace}", file=sys.stderr)
        r["trace"] = trace
        r["replay"] = replay_predictions(o, path)
        r["replay"]["commit"] = commit()
        again.append((r["ranks"], r["run"]))
    if not again:
        raise pc.StudyError(f"{o.out}: no static or dbs record to replay")
    pc.write_jsonl(o.out, STUDY, records)
    print(f"scale: {len(again)} record(s) replayed again in {o.out}", file=sys.stderr)
    return records


def replay_predictions(o, trace):
    """What dbs-scheduler replay predicts from the run's trace: the total under static and under
    dbs, and the recorded total it reproduces under the trace's own policy."""
    sched = os.path.join(o.build, "scheduler", "dbs-scheduler")
    p = subprocess.run([sched, "replay", trace, "--compare", "static,dbs", "--json"], capture_output=True, text=True)
    if p.returncode != 0:
        raise pc.StudyError(f"replay {trace}: {p.stderr.strip()}")
    try:
        d = json.loads(p.stdout)
        recorded = next(v["recorded_total_s"] for v in d.values() if "recorded_total_s" in v)
        return {"recorded_total_s": recorded, "static_s": d["static"]["total_s"], "dbs_s": d["dbs"]["total_s"]}
    except (ValueError, KeyError, StopIteration) as e:
        raise pc.StudyError(f"replay {trace}: not the JSON of --compare ({e})") from None


def derived_spec(spec, scratch, n, phase):
    """The spec's cluster for 3 epochs with its slowdown dropped (before) or from the start (after)."""
    d = dict(spec, epochs=min(3, spec["epochs"]))
    if phase == "before":
        d.pop("disturbances", None)
    else:
        d["disturbances"] = [dict(x, **{"from": 1}) for x in spec["disturbances"]]
    d["comment"] = f"traces/scale-{n}.json for 3 epochs, the speeds {phase} its slowdown"
    path = os.path.join(scratch, f"scale-{n}-{phase}.json")
    with open(path, "w") as f:
        json.dump(d, f)
    return path


def study(o):
    if o.replay_only:
        return replay_again(o)
    scratch = o.logs or tempfile.mkdtemp(prefix="dbs-scale-")
    os.makedirs(scratch, exist_ok=True)
    for path in (os.path.join(o.build, "agents", "dbs-agent"), os.path.join(o.build, "scheduler", "dbs-scheduler")):
        if not os.access(path, os.X_OK):
            raise pc.StudyError(f"no {path}: build first (source agents/setup.sh; dbs_build {o.build})")
    part = o.out + ".part"
    os.makedirs(os.path.dirname(os.path.abspath(part)), exist_ok=True)
    # A study stopped half-way continues: the runs recorded in --out.part are not run again.
    records = pc.read_jsonl(part, STUDY) if os.path.exists(part) else []
    done = {(r["ranks"], r["run"]) for r in records}

    def keep(rec):
        records.append(rec)
        with open(part, "a") as f:
            f.write(json.dumps(rec, sort_keys=True) + "\n")

    for n in o.ranks:
        path = spec_path(o, n)
        with open(path) as f:
            spec = json.load(f)
        speeds = spec_speeds(o.build, path, scratch)
        first = slowdown_epoch(spec)
        if (n, "spec") not in done:
            keep({"study": STUDY, "ranks": n, "run": "spec", "spec": shown(path),
                  "step_noise": spec.get("step_noise", 0), "slowdown_from": first, "epochs": spec["epochs"],
                  "global_batch": spec["global_batch"],
                  "speeds": {"before": speeds[0], "after": speeds[first - 1]}})
        for name in o.runs:
            if (n, name) in done:
                print(f"scale: {n} ranks, {name}: recorded in {part}, not run again", file=sys.stderr)
                continue
            if name in ("static", "dbs"):
                keep(run_job(o, n, path, name, name, scratch))
            elif name in ("best-before", "best-after"):
                phase = name.split("-")[1]
                v = speeds[0] if phase == "before" else speeds[first - 1]
                fixed = "fixed:" + ",".join(map(str, best_split(v, spec["global_batch"])))
                keep(run_job(o, n, derived_spec(spec, scratch, n, phase), name, fixed, scratch))
            elif name == "collective":
                keep(run_collective(o, n))
            elif name in ("daemon", "kill") and (name == "daemon" or n in o.kill_ranks):
                daemon = Daemon(o.build, scratch, f"{n}-{name}")
                try:
                    keep(run_job(o, n, path, name, "dbs", scratch, daemon,
                                 o.kill_after if name == "kill" else None))
                finally:
                    daemon.stop()
    ran = {(r["ranks"], r["run"]) for r in records}
    pc.write_jsonl(o.out, STUDY, records, replace=lambda r: (r.get("ranks"), r.get("run")) in ran)
    os.remove(part)
    print(f"scale: records in {o.out}; logs in {scratch}", file=sys.stderr)
    return records


# ---------------------------------------------------------------------------------------------
# figures

def expected_step(b, v, sigma, draws):
    """E over the draws of max_i b_i / v_i * exp(sigma z_i - sigma^2 / 2): a step's compute."""
    cost = [bi / vi for bi, vi in zip(b, v)]
    shift = sigma * sigma / 2
    return sum(max(c * math.exp(sigma * z - shift) for c, z in zip(cost, row)) for row in draws) / len(draws)


def mean(xs):
    return sum(xs) / len(xs) if xs else 0.0


def figures(recs):
    """Per size: the phases' figures and the control plane, from the records of one size."""
    by = {r["run"]: r for r in recs}
    spec = by.get("spec")
    if spec is None:
        return None
    n, first = spec["ranks"], spec["slowdown_from"]
    out = {"ranks": n, "epochs": spec["epochs"], "phases": {}, "control": {}, "daemon": None, "kill": None,
           "pace": {}}
    rng = random.Random(0)
    draws = [[rng.gauss(0, 1) for _ in range(n)] for _ in range(1000)]
    for phase in ("before", "after"):
        v = spec["speeds"][phase]
        lo, hi = (2, first - 1) if phase == "before" else (first + 1, None)

        def steady(run):
            es = by[run]["epochs"] if run in by else []
            return [e for e in es if e["epoch"] >= lo and (hi is None or e["epoch"] <= hi)]

        f = {"bound": sum(v) / (len(v) * min(v))}
        dbs = steady("dbs")
        if dbs:
            f["dbs_s"] = mean([e["wall_s"] for e in dbs])
            best = best_split(v, spec["global_batch"])
            e_best = expected_step(best, v, spec["step_noise"], draws)
            e_dbs = mean([expected_step(e["batch"], v, spec["step_noise"], draws) for e in dbs])
            f["plan_ratio"] = e_dbs / e_best
            equal = best_split([1] * n, spec["global_batch"])
            f["plan_gain"] = expected_step(equal, v, spec["step_noise"], draws) / e_dbs
        ref = by.get("best-" + phase)
        if ref and dbs:
            f["best_s"] = mean([e["wall_s"] for e in ref["epochs"] if e["epoch"] >= 2])
            f["ratio"] = f["dbs_s"] / f["best_s"]
        static = steady("static")
        if static and dbs:
            f["static_s"] = mean([e["wall_s"] for e in static])
            f["gain"] = f["static_s"] / f["dbs_s"]
        out["phases"][phase] = f
    if "dbs" in by:
        changes = [e for e in by["dbs"]["epochs"] if e["epoch"] >= 3 and e["changed"]]
        nxt = by["dbs"]["next"]
        out["changes"] = len(changes) + (1 if nxt and nxt["changed"] else 0)
    for run in ("dbs", "daemon"):
        if run in by:
            es = by[run]["epochs"]
            # check_s: a plan check's own allgather, in records of agents that ran one
            c = {k: mean([e["control"].get(k, 0.0) for e in es])
                 for k in ("reports_s", "plan_s", "daemon_s", "check_s", "total_s")}
            c["max_total_s"] = max(e["control"]["total_s"] for e in es)
            # waited_s: the wait for the last rank to reach the epoch's end (absent from older records)
            known = all("waited_s" in e["control"] for e in es)
            c["waited_s"] = mean([e["control"]["waited_s"] for e in es]) if known else None
            c["own_s"] = c["total_s"] - c["waited_s"] if known else None
            out["control"][run] = c
    if "daemon" in by:
        r = by["daemon"]
        sources = [e["source"] for e in r["epochs"][1:]] + ([r["next"]["source"]] if r["next"] else [])
        out["daemon"] = {"plans": len(sources), "from_daemon": sources.count("daemon"),
                         "epochs_done": r["epochs_done"]}
    if "kill" in by:
        r = by["kill"]
        k = r["killed_after"] or 0
        sources = [e["source"] for e in r["epochs"][1:]] + ([r["next"]["source"]] if r["next"] else [])
        out["kill"] = {"killed_after": k, "epochs_done": r["epochs_done"], "before": sources[:k],
                       "after": sources[k:],
                       "wait_s": r["epochs"][k]["control"]["plan_s"] if k < len(r["epochs"]) else None}
    out["replay"] = []
    for src, dst in (("static", "dbs"), ("dbs", "static")):
        a, b = by.get(src), by.get(dst)
        if a and b and a.get("replay") and b.get("replay"):
            got = b["replay"]["recorded_total_s"]
            out["replay"].append({"from": src, "to": dst, "predicted_s": a["replay"][dst + "_s"],
                                  "recorded_s": got, "own_error": a["replay"][src + "_s"] /
                                  a["replay"]["recorded_total_s"] - 1})
    if "collective" in by:
        out["collective"] = by["collective"]["allgather"]
    for run, r in by.items():
        if run not in ("spec", "collective"):
            p = r["pace"]
            out["pace"][run] = {"over": p["took_s"] / p["asked_s"] - 1, "late_us": p["late_us"],
                                "latest_us": p["latest_us"], "wall_s": r["wall_s"]}
    return out


def fmt(x, pattern="%.3f", none="-"):
    return none if x is None else pattern % x


def ms(x):
    return "%.1f ms" % (1e3 * x)


def markdown(header, rows):
    """A markdown table's lines."""
    return (["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] +
            ["| " + " | ".join(str(x) for x in row) + " |" for row in rows])


def tables(records):
    """The study's tables from its records: {name: (title, header, rows)}, in the report's order."""
    sizes = sorted({r.get("ranks") for r in records if isinstance(r.get("ranks"), int)})
    try:
        figs = [f for f in (figures([r for r in records if r["ranks"] == n]) for n in sizes) if f]
    except (KeyError, TypeError, IndexError, ZeroDivisionError) as e:
        raise pc.StudyError(f"not the scale study's records ({type(e).__name__}: {e})") from None
    out = {}
    rows = []
    for f in figs:
        for phase, p in f["phases"].items():
            gb = p["gain"] / p["bound"] if "gain" in p else None
            pgb = p["plan_gain"] / p["bound"] if "plan_gain" in p else None
            rows.append([f["ranks"], phase, fmt(p.get("dbs_s"), "%.2f s"), fmt(p.get("best_s"), "%.2f s"),
                         fmt(p.get("ratio"), "%.3fx"), fmt(p.get("plan_ratio"), "%.3fx"),
                         fmt(p.get("static_s"), "%.2f s"), fmt(p.get("gain"), "%.2fx"), "%.2fx" % p["bound"],
                         fmt(gb, "%.3f"), fmt(p.get("plan_gain"), "%.2fx"), fmt(pgb, "%.3f")])
    out["balance"] = ("Balance (per phase: dbs's steady epochs; best: the best-split run; plan ratio and "
                      "plan gain: the compute alone, analytic)",
                      ["ranks", "phase", "dbs epoch", "best split", "ratio", "plan ratio", "static", "gain",
                       "bound", "gain / bound", "plan gain", "plan gain / bound"], rows)
    out["changes"] = ("Plan changes after the first (one slowdown)", ["ranks", "dbs's plan changes"],
                      [[f["ranks"], fmt(f.get("changes"), "%d")] for f in figs])
    rows = []
    own_check = any(c["check_s"] > 0 for f in figs for c in f["control"].values())
    for f in figs:
        for run, c in f["control"].items():
            own = c["own_s"]
            rows.append([f["ranks"], "embedded" if run == "dbs" else "daemon", ms(c["reports_s"]),
                         ms(c["plan_s"] - c["daemon_s"]), ms(c["daemon_s"])]
                        + ([ms(c["check_s"])] if own_check else [])
                        + [ms(c["total_s"]), ms(c["max_total_s"]), "%.2f%%" % (100 * c["total_s"] / 10),
                           "-" if c["waited_s"] is None else ms(c["waited_s"]),
                           "-" if own is None else ms(own), "-" if own is None else "%.2f%%" % (100 * own / 10)])
    out["control"] = ("Control plane per epoch, rank 0 (mean over the epochs; max total; after the last "
                      "rank's arrival: the total less the wait for it)",
                      ["ranks", "planner", "reports" if own_check else "reports and check", "planning",
                       "daemon round trip"]
                      + (["plan check"] if own_check else [])
                      + ["total", "max", "of a 10 s epoch", "of it, waiting for the last rank",
                         "after the last rank's arrival", "of a 10 s epoch"],
                      rows)
    rows = []
    for f in figs:
        if f["daemon"]:
            d = f["daemon"]
            rows.append([f["ranks"], "daemon", f"{d['from_daemon']} of {d['plans']}", "-", "-", "-",
                         f"{d['epochs_done']} of {f['epochs']}"])
        if f["kill"]:
            k = f["kill"]
            rows.append([f["ranks"], "kill", f"{k['before'].count('daemon')} of {len(k['before'])} before the kill",
                         k["killed_after"], ", ".join(sorted(set(k["after"]))) or "-", fmt(k["wait_s"], "%.1f s"),
                         f"{k['epochs_done']} of {f['epochs']}"])
    floor = []
    for f in figs:
        if not f.get("collective"):
            continue
        g, run = f["collective"], "daemon" if "daemon" in f["control"] else "dbs"
        c = f["control"].get(run)
        floor.append([f["ranks"], "%.2f ms" % (1e3 * g["spin"]["median_s"]),
                      "%.2f ms" % (1e3 * g["sleep"]["median_s"]),
                     f"{ms(c['total_s'])} ({'daemon' if run == 'daemon' else 'embedded'})" if c else "-",
                     "%.1f" % (c["total_s"] / g["sleep"]["median_s"]) if c else "-"])
    out["collective"] = ("One collective on this machine: an allgather of a rank's 424 bytes of figures among the "
                         "ranks' processes (median of 5, arrivals aligned), beside the control plane per epoch",
                         ["ranks", "allgather, blocking (spin)", "allgather, sleeping waits", "control plane",
                          "control plane / sleeping allgather"], floor)
    out["daemon"] = ("The daemon (end-of-epoch plans from it; the kill run's sources after the kill)",
                     ["ranks", "run", "plans from the daemon", "killed after epoch", "sources after",
                      "first plan after", "epochs done"], rows)
    out["replay"] = ("Replay across policies: one run's trace replayed under the other policy, against that "
                     "policy's run (target within 3%; under its own policy within 1%)",
                     ["ranks", "trace", "predicts", "predicted", "recorded", "error", "own policy"],
                     [[f["ranks"], x["from"], x["to"], "%.1f s" % x["predicted_s"], "%.1f s" % x["recorded_s"],
                       "%+.1f%%" % (100 * (x["predicted_s"] / x["recorded_s"] - 1)),
                       "%+.2f%%" % (100 * x["own_error"])]
                      for f in figs for x in f["replay"]])
    out["emulation"] = ("The emulation: the waits' time over the spec's cost, wake-up lateness per step",
                        ["ranks", "run", "over the cost", "late a step", "latest rank", "run wall"],
                        [[f["ranks"], run, "%+.2f%%" % (100 * p["over"]), f"{p['late_us']} us",
                          f"{p['latest_us']} us", "%.0f s" % p["wall_s"]]
                         for f in figs for run, p in f["pace"].items()])
    return out


def report(records):
    for title, header, rows in tables(records).values():
        print(f"\n{title}\n")
        print("\n".join(markdown(header, rows)))


if __name__ == "__main__":
    sys.exit(pc.main("scale.py", STUDY, options, study, report, sys.argv[1:]))
