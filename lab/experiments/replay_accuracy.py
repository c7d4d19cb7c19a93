#!/usr/bin/python3
"""The replay accuracy study: does a trace recorded under one policy predict a run under another?
2 ranks, 6,000 samples, global batch 128, 6 epochs, rank 1 the slow one.

    lab/experiments/replay_accuracy.py [--build DIR] [--out FILE] [--traces DIR] [--pairs N] ...
    lab/experiments/replay_accuracy.py --replay-only      # replay the recorded traces again
    lab/experiments/replay_accuracy.py --report FILE      # the tables of recorded results

Workloads (--workloads): sleep (dbs-agent, the CNN, rank 1 slowed x3 by --disturb's sleep),
quota (dbs-agent, rank 1 held to --quota of a core by a CPU cgroup) and pytorch
(examples/pytorch/train.py under the same quota, with --trace). For each, --pairs times a static
run then a dbs run, so that drift of the machine falls on both alike; each run's trace goes to
--traces. Then every trace is replayed (dbs-scheduler replay TRACE --compare OTHER,OWN --json):
under the other policy, which predicts the other policy's runs, and under its own, which
reproduces its own total.

The table, per workload and direction: the mean of the predictions against the mean recorded
total of the other policy's runs, that error, and the recorded runs' own spread (their standard
deviation over their mean) beside it; the ratio yardstick, each trace's prediction over its own
recorded total (one run: drift between runs cannot move it) against the ratio of the recorded
means; the largest own-policy error. The machine's load average over each run is in its record.
Records, one JSON line per run (its command, trace, totals, predictions and load), go to --out
(replacing its replay-accuracy records of the workloads run; other workloads' and other studies'
records stay, and the tables show them all), and to --out.part as each run ends. Needs root and a writable CPU cgroup for quota and pytorch. Exits 1 where a run fails.
"""
import argparse
import json
import math
import os
import shlex
import subprocess
import sys
import textwrap
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_common as pc  # noqa: E402

STUDY = "replay-accuracy"
WORKLOADS = ("sleep", "quota", "pytorch")
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none"]
OTHER = {"static": "dbs", "dbs": "static"}
# Moves an mpirun rank into the cgroup $1 when it is rank $2, then runs the rest.
QUOTA_RANK = ('if [ "$OMPI_COMM_WORLD_RANK" = "$2" ]; then echo $$ >"$1/cgroup.procs"; fi; '
              'shift 2; exec "$@"')


def options(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter,
                                epilog="example: lab/experiments/replay_accuracy.py --build build "
                                       "--out out/replay.jsonl --traces out/replay-traces")
    p.add_argument("--build", default="build", help="the meson build")
    p.add_argument("--out", default="docs/results/replay.jsonl", help="the records (JSON lines)")
    p.add_argument("--traces", default="traces/accuracy", help="where the runs' traces go")
    p.add_argument("--report", default="", metavar="FILE",
                   help="print the tables of FILE's records and exit (no runs)")
    p.add_argument("--replay-only", action="store_true",
                   help="no runs: replay the traces of --out's records again with --build")
    p.add_argument("--workloads", default=",".join(WORKLOADS), help="comma list of " +
                   ", ".join(WORKLOADS))
    p.add_argument("--pairs", type=int, default=3, help="static-then-dbs pairs per workload")
    p.add_argument("--quota", type=float, default=0.33, help="rank 1's CPU quota, cores")
    p.add_argument("--factor", type=float, default=3.0, help="rank 1's slowdown, sleep workload")
    p.add_argument("--epochs", type=int, default=6, help="epochs per run")
    p.add_argument("--batch", type=int, default=128, help="global batch")
    p.add_argument("--train-limit", type=int, default=6000, help="training samples")
    p.add_argument("--test-limit", type=int, default=1000, help="test samples")
    p.add_argument("--timeout", type=int, default=7200, help="seconds a run may take")
    o = p.parse_args(argv)
    o.workloads = [w for w in o.workloads.split(",") if w]
    for w in o.workloads:
        if w not in WORKLOADS:
            p.error(f"--workloads: '{w}' is not one of {', '.join(WORKLOADS)}")
    if o.pairs < 1 or o.epochs < 1:
        p.error("--pairs and --epochs must be at least 1")
    return o


def shown(path):
    """A path as the records show it: from the repository root where it is inside it."""
    path = os.path.abspath(path)
    return os.path.relpath(path, pc.ROOT) if path.startswith(pc.ROOT + os.sep) else path


def load():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def agent_command(o, policy, trace, quota_group=None):
    agent = shown(os.path.join(o.build, "agents", "dbs-agent"))
    args = [agent, "--model", "cnn", "--threads", "1", "--train-limit", str(o.train_limit),
            "--test-limit", str(o.test_limit), "--epochs", str(o.epochs), "--batch", str(o.batch),
            "--no-progress", "--policy", policy, "--trace", trace]
    if quota_group is None:
        return MPIRUN + ["-np", "2"] + args + ["--disturb", f"rank=1,factor={o.factor:g}"]
    return MPIRUN + ["-np", "2", "sh", "-c", QUOTA_RANK, "quota-rank", quota_group, "1"] + args


def run_agent(o, workload, policy, trace, log):
    """One dbs-agent job; returns its command as run."""
    if not os.access(os.path.join(o.build, "agents", "dbs-agent"), os.X_OK):
        raise pc.StudyError(f"no {o.build}/agents/dbs-agent: build first")
    group = pc.CpuCgroup("dbs-replay-", 1, o.quota) if workload == "quota" else None
    try:
        cmd = agent_command(o, policy, trace, group.path if group else None)
        with open(log, "w") as out:
            try:
                p = subprocess.run(cmd, cwd=pc.ROOT, stdout=out, stderr=subprocess.STDOUT,
                                   timeout=o.timeout, check=False)
            except subprocess.TimeoutExpired:
                raise pc.StudyError(f"{workload} {policy}: timed out after {o.timeout} s") from None
        if p.returncode != 0:
            with open(log) as f:
                tail = "".join(f.readlines()[-6:])
            raise pc.StudyError(f"{workload} {policy} failed (exit {p.returncode}): {tail}")
        return cmd
    finally:
        if group is not None:
            group.close()


def run_pytorch(o, policy, trace, log):
    """One train.py job under the quota; returns its train.py arguments."""
    help_text = subprocess.run(["/usr/bin/python3", pc.TRAIN, "--help"], capture_output=True,
                               text=True, env=dict(os.environ, PYTHONPATH=pc.check_build(o.build)),
                               check=False).stdout
    if "--trace" not in help_text:
        raise pc.StudyError("examples/pytorch/train.py has no --trace: the pytorch workload needs "
                            "dbs.torch's trace")
    args = ["--threads", "1", "--train-limit", o.train_limit, "--test-limit", o.test_limit,
            "--epochs", o.epochs, "--batch", o.batch, "--policy", policy, "--trace",
            os.path.join(pc.ROOT, trace)]
    pc.train(o.build, 2, args, quota=(1, o.quota), timeout=o.timeout, log=log)
    args[-1] = shown(args[-1])
    return ["torchrun", "--nproc_per_node", "2", "examples/pytorch/train.py", *map(str, args),
            f"(rank 1 in a CPU cgroup of quota {o.quota:g})"]


def replay(o, trace, policy):
    """The JSON of dbs-scheduler replay TRACE --compare OTHER,POLICY."""
    sched = os.path.join(o.build, "scheduler", "dbs-scheduler")
    p = subprocess.run([sched, "replay", os.path.join(pc.ROOT, trace), "--compare", f"{OTHER[policy]},{policy}", "--json"],
                       capture_output=True, text=True, check=False)
    if p.returncode != 0:
        raise pc.StudyError(f"replay {trace} failed: {p.stderr.strip()}")
    return json.loads(p.stdout)


def replayed(o, record):
    """The record with its predictions from the trace (replayed now with --build)."""
    j = replay(o, record["trace"], record["policy"])
    own, other = j[record["policy"]], j[OTHER[record["policy"]]]
    record = dict(record)
    record.update(recorded_total_s=own["recorded_total_s"], own_error=own["error"],
                  predicted_other_s=other["total_s"], where=other["where"],
                  recorded_where=own["recorded_where"])
    return record


def study(o):
    o.build = os.path.abspath(o.build)
    os.makedirs(o.traces, exist_ok=True)
    part = o.out + ".part"
    records = []
    for workload in o.workloads:
        for pair in range(1, o.pairs + 1):
            for policy in ("static", "dbs"):
                name = f"{workload}-{policy}-{pair}"
                trace = shown(os.path.join(o.traces, name + ".jsonl"))
                log = os.path.join(o.traces, name + ".log")
                start, before = time.time(), load()
                print(f"{STUDY}: {name}: running (load {before:.1f})", file=sys.stderr)
                if workload == "pytorch":
                    cmd = run_pytorch(o, policy, trace, log)
                else:
                    cmd = run_agent(o, workload, policy, trace, log)
                r = replayed(o, {"study": STUDY, "workload": workload, "policy": policy,
                                 "pair": pair, "trace": trace, "command": shlex.join(cmd),
                                 "load_before": before, "load_after": load(),
                                 "run_s": time.time() - start, "epochs": o.epochs})
                print(f"{STUDY}: {name}: recorded {r['recorded_total_s']:.2f} s, "
                      f"{OTHER[policy]} predicted {r['predicted_other_s']:.2f} s, own error "
                      f"{100 * r['own_error']:+.2f}%", file=sys.stderr)
                records.append(r)
                pc.write_jsonl(part, STUDY, records)
    pc.write_jsonl(o.out, STUDY, records, replace=lambda r: r.get("workload") in o.workloads)
    os.remove(part)
    return [r for r in pc.read_jsonl(o.out, STUDY)]


def replay_only(o):
    o.build = os.path.abspath(o.build)
    records = [replayed(o, r) for r in pc.read_jsonl(o.out, STUDY)]
    pc.write_jsonl(o.out, STUDY, records)
    return records


def mean(xs):
    return sum(xs) / len(xs)


def spread(xs):
    """Standard deviation over the mean (0 for one value)."""
    if len(xs) < 2:
        return 0.0
    m = mean(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) / m


def summarize(records):
    """Per workload and direction: the figures of the table (a list of dicts)."""
    rows = []
    for workload in WORKLOADS:
        mine = [r for r in records if r["workload"] == workload]
        if not mine:
            continue
        for src in ("static", "dbs"):
            dst = OTHER[src]
            traces = [r for r in mine if r["policy"] == src]
            targets = [r["recorded_total_s"] for r in mine if r["policy"] == dst]
            if not traces or not targets:
                continue
            predicted = mean([r["predicted_other_s"] for r in traces])
            recorded = mean(targets)
            own = mean([r["recorded_total_s"] for r in traces])
            ratio = mean([r["predicted_other_s"] / r["recorded_total_s"] for r in traces])
            rows.append({
                "workload": workload, "direction": f"{src} -> {dst}", "runs": len(traces),
                "predicted_s": predicted, "recorded_s": recorded,
                "error": predicted / recorded - 1, "spread": spread(targets),
                "ratio_predicted": ratio, "ratio_recorded": recorded / own,
                "ratio_error": ratio / (recorded / own) - 1,
                "own_error": max(abs(r["own_error"]) for r in traces),
                "load": [min(r["load_before"] for r in mine), max(r["load_after"] for r in mine)]})
    return rows


WORKLOAD_NAMES = {"sleep": "CNN, rank 1 slowed ×3 (sleep)",
                  "quota": "CNN, rank 1 at a CPU quota",
                  "pytorch": "train.py, rank 1 at a CPU quota"}


def verdict(row):
    """Whether a row meets its targets: the mean prediction within 3% of the mean recorded total,
    or within the recorded runs' spread where that is larger; every trace under its own policy
    within 1%."""
    close = abs(row["error"]) <= 0.03 or abs(row["error"]) <= row["spread"]
    how = "yes" if abs(row["error"]) <= 0.03 else "within the spread" if close else "no"
    own = "yes" if row["own_error"] <= 0.01 else "no"
    return how, own, close and own == "yes"


def table_lines(records):
    """The results table of the records (markdown lines) and the verdict line under it."""
    rows = summarize(records)
    lines = ["| workload | prediction | runs | predicted (mean) | recorded (mean) | error "
             "| recorded spread | within 3% | ratio predicted / recorded (error) "
             "| own policy, worst | within 1% | load average |",
             "|---|---|---:|---:|---:|---:|---:|---|---:|---:|---|---:|"]
    met = 0
    for r in rows:
        how, own, ok = verdict(r)
        met += ok
        lines.append(
            f"| {WORKLOAD_NAMES[r['workload']]} | {r['direction'].replace('->', '→')} | {r['runs']} "
            f"| {r['predicted_s']:.2f} s | {r['recorded_s']:.2f} s "
            f"| {100 * r['error']:+.1f}% | {100 * r['spread']:.1f}% | {how} "
            f"| {r['ratio_predicted']:.3f} / {r['ratio_recorded']:.3f} "
            f"({100 * r['ratio_error']:+.1f}%) | {100 * r['own_error']:.2f}% | {own} "
            f"| {r['load'][0]:.1f}–{r['load'][1]:.1f} |".replace("-", "−"))
    trips = []
    for workload in WORKLOADS:
        both = [r for r in rows if r["workload"] == workload]
        if len(both) == 2:
            trip = (1 + both[0]["error"]) * (1 + both[1]["error"]) - 1
            trips.append(f"{WORKLOAD_NAMES[workload]} {100 * trip:+.1f}%".replace("-", "−"))
    if trips:
        lines += [""] + textwrap.wrap(
            "Round trip, the two predictions' ratios to the recorded means multiplied (a load that "
            "slows one policy's runs by a factor moves one ratio by it and the other by its "
            "inverse; within ±6% when both are within 3%): " + "; ".join(trips) + ".", width=100)
    lines += [""] + textwrap.wrap(
        f"{met} of {len(rows)} predictions meet both targets: within 3% of the mean recorded total "
        "(or within the recorded runs' spread, where that is larger) and every trace within 1% "
        "under its own policy.", width=100)
    return lines


def report(records):
    print("\n".join(table_lines(records)))


def main(argv):
    o = options(argv)
    try:
        if o.report:
            records = pc.read_jsonl(o.report, STUDY)
        elif o.replay_only:
            records = replay_only(o)
        else:
            records = study(o)
        report(records)
    except pc.StudyError as e:
        print(f"replay_accuracy.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
