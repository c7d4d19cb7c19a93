#!/usr/bin/env python3
"""The headline benchmarks, compared with the committed records (tests/run.sh --bench).

Runs, against a build: the engine (dbs-bench train, cnn, 1 and 2 threads, with the fraction of
the measured FMA peak), the daemon under load (dbs-bench scheduler, the five runs of the
scheduler-load page: 256 and 4,000 agents, in memory and with the journal: reports/s, p50, p99,
daemon CPU and allocations per report, and the plan of a 10,000-rank job), the exchange
(dbs-bench allreduce under mpirun, 2 ranks, the cnn's gradient in each exchange and wait mode),
the noise filter (dbs-bench filter) and replay (dbs-scheduler replay of traces/synth-1000.json).
About 2 minutes on an idle 2-core machine, most of it the filter's t-SNE.

Each measurement becomes a record (bench/records.py) with the machine's facts, the commit and the
load average; the run's records are written to out/bench/run-DATE.jsonl. Each figure is printed
beside the latest committed record of the same study in docs/results/, with their ratio, and
marked where it moved further than the tolerance: the run-to-run spread of the committed set
or of this one (--runs N measures each benchmark N times and keeps the medians and every
value), or, where neither has a spread, a default per kind of figure (DEFAULT_TOLERANCE).
--save appends the records to the studies' files and regenerates the results tables
(bench/tables.py --write).

Exit status: 0 when every benchmark ran, 1 when one failed (its error is printed), 2 for a bad
option. A figure beyond its tolerance is marked, not failed: the CI's check on figures that a
shared machine does not move is the regression gate, bench/gate.py.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import records  # noqa: E402

RESULTS = records.SOURCE / "docs" / "results"

# Tolerance of a figure whose committed record and this run both lack a measured spread, by
# kind: wall-clock times and rates on a machine shared with other work; latency percentiles
# (their tail moves with every wake-up the scheduler delays); CPU time (what other processes
# move through caches and clock speed); counts (allocations, bytes: the code's, not the
# machine's); fractions of the measured peak.
DEFAULT_TOLERANCE = {"wall": 0.15, "latency": 0.5, "cpu": 0.15, "count": 0.02, "fraction": 0.10}


class Study:
    """One kind of record: its file in docs/results, the fields that say which measurement it is
    (a committed record is compared with the new one of the same key), and its figures as
    (name, "higher" or "lower" is better, kind)."""

    def __init__(self, name, file, key, figures):
        self.name, self.file, self.key, self.figures = name, file, key, figures

    def path(self, results=RESULTS):
        return results / self.file


STUDIES = {s.name: s for s in [
    Study("engine-train", "engine.jsonl", ["threads"],
          [("images_per_s", "higher", "wall"), ("peak_fraction", "higher", "fraction"),
           ("peak_fraction_cpu", "higher", "fraction")]),
    Study("scheduler-load", "scheduler-load.jsonl", ["command"],
          [("reports_per_s", "higher", "wall"), ("p50_ms", "lower", "latency"),
           ("p99_ms", "lower", "latency"), ("daemon_cpu_us_per_report", "lower", "cpu"),
           ("daemon_allocations_per_report", "lower", "count")]),
    Study("scheduler-plan", "scheduler-load.jsonl", ["plan_ranks"],
          [("plan_ms", "lower", "wall"), ("plan_cpu_ms", "lower", "cpu"),
           ("plan_allocations", "lower", "count"), ("plan_encode_ms", "lower", "wall"),
           ("plan_message_bytes", "lower", "count")]),
    Study("exchange-shm", "exchange.jsonl", ["exchange"],
          [("asleep_median_us", "lower", "wall"), ("spinning_median_us", "lower", "wall"),
           ("asleep_cpu_median_us", "lower", "cpu"), ("spinning_cpu_median_us", "lower", "cpu")]),
    Study("filter-bench", "filter-bench.jsonl", [],
          [("tsne.total_s", "lower", "wall"), ("tsne.cpu_s", "lower", "cpu"),
           ("dbscan.total_s", "lower", "wall")]),
    Study("replay-1000-ranks", "replay.jsonl", ["ranks"],
          [("wall_s", "lower", "wall"), ("cpu_s", "lower", "cpu"), ("rss_mb", "lower", "count")]),
]}


class Failure(Exception):
    """A benchmark that did not run: the message says which command and why."""


class Run:
    """One benchmark run: the binaries of a build, the facts every record carries."""

    def __init__(self, build, scratch):
        self.build, self.scratch = build, scratch
        self.bench = build / "bench" / "dbs-bench"
        self.scheduler = build / "scheduler" / "dbs-scheduler"
        for binary in (self.bench, self.scheduler):
            if not binary.exists():
                raise Failure(f"{binary} does not exist: build it first (tests/run.sh builds {build.name}/)")
        peak = self.json([self.bench, "peak", "--seconds", "1"])
        version = subprocess.run([self.bench, "--version"], capture_output=True, text=True).stdout.strip()
        self.facts = {"date": records.now_utc(), "commit": records.commit(),
                      "machine": records.machine_facts(peak), "build": version}

    def json(self, argv, **kw):
        """Runs argv and returns its stdout as JSON."""
        words = [str(a) for a in argv]
        run = subprocess.run(words, capture_output=True, text=True, **kw)
        if run.returncode != 0:
            tail = "\n".join(run.stderr.strip().splitlines()[-5:])
            raise Failure(f"{' '.join(words)} exited {run.returncode}: {tail}")
        try:
            return json.loads(run.stdout)
        except json.JSONDecodeError as e:
            raise Failure(f"{' '.join(words)} printed no JSON document ({e})") from None

    def record(self, study, command, fields, load_before):
        """A record of the study: its figures and key fields, and the run's facts."""
        return {"study": study, **fields, "command": command, **self.facts,
                "load": [load_before, records.load_average()]}


def command_text(argv):
    """The command as the docs write it: binaries by name, without the build directory."""
    return " ".join(Path(str(a)).name if str(a).startswith("/") else str(a) for a in argv)


def bench_engine(run):
    out = []
    for threads in (1, 2):
        argv = [run.bench, "train", "--model", "cnn", "--batch", "128", "--steps", "30",
                "--threads", str(threads)]
        load = records.load_average()
        j = run.json(argv)
        fields = {k: j[k] for k in ("threads", "images_per_s", "gflops", "peak_fraction",
                                    "peak_fraction_cpu", "peak_gflops_per_core",
                                    "peak_gflops_per_cpu_s", "step_ms_median",
                                    "train_mflop_per_sample")}
        out.append(run.record("engine-train", command_text(argv), fields, load))
    return out


# The rows of the scheduler-load page, each a run of `dbs-bench scheduler`; DIR is a fresh state
# directory (the journal synced per epoch).
DAEMON_RUNS = [
    ["--agents", "256", "--reports", "200"],
    ["--agents", "256", "--reports", "200", "--state-dir", "DIR"],
    ["--agents", "4000", "--reports", "20"],
    ["--agents", "4000", "--reports", "20", "--epoch-ms", "100"],
    ["--agents", "4000", "--reports", "20", "--epoch-ms", "100", "--state-dir", "DIR"],
]


def bench_daemon(run):
    out = []
    for i, args in enumerate(DAEMON_RUNS):
        state = run.scratch / f"state-{i}"
        shutil.rmtree(state, ignore_errors=True)
        argv = [run.bench, "scheduler"] + [str(state) if a == "DIR" else a for a in args]
        load = records.load_average()
        j = run.json(argv, timeout=600)
        shutil.rmtree(state, ignore_errors=True)
        command = " ".join(["dbs-bench", "scheduler"] + args)
        load_fields = {k: j[k] for k in ("protocol_version", "agents", "world", "reports",
                                         "reports_per_s", "p50_ms", "p90_ms", "p99_ms",
                                         "daemon_cpu_us_per_report", "client_cpu_us_per_report",
                                         "daemon_allocations_per_report")}
        out.append(run.record("scheduler-load", command, load_fields, load))
        if i == 0:  # the plan of a 10,000-rank job, the same in every run
            plan_fields = {k: j[k] for k in ("protocol_version", "plan_ranks", "plan_ms",
                                             "plan_cpu_ms", "plan_allocations", "plan_encode_ms",
                                             "plan_message_bytes")}
            out.append(run.record("scheduler-plan", command, plan_fields, load))
    return out


def bench_exchange(run):
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        raise Failure("mpirun is not on PATH (Debian: openmpi-bin)")
    argv = [mpirun, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-np", "2",
            run.bench, "allreduce", "--sizes", "690593", "--reps", "40", "--wait", "spin,sleep",
            "--exchange", "allreduce,ring,sharded,overlap"]
    load = records.load_average()
    j = run.json(argv, timeout=600)
    size = j["sizes"][0]
    out = []
    for exchange, waits in size["communicator"].items():
        fields = {"exchange": exchange, "floats": size["floats"], "ranks": j["ranks"]}
        for wait, name in (("sleep", "asleep"), ("spin", "spinning")):
            fields[f"{name}_median_us"] = round(waits[wait]["median_us"], 1)
            fields[f"{name}_cpu_median_us"] = round(waits[wait]["cpu_median_us"], 1)
        out.append(run.record("exchange-shm", command_text(["mpirun"] + argv[1:]), fields, load))
    return out


def bench_filter(run):
    argv = [run.bench, "filter"]
    load = records.load_average()
    j = run.json(argv, timeout=1200)
    j.pop("bench", None)
    return [run.record("filter-bench", command_text(argv), j, load)]


def bench_replay(run):
    spec = records.SOURCE / "traces" / "synth-1000.json"
    trace, report = run.scratch / "big.jsonl", run.scratch / "big.html"
    subprocess.run([run.scheduler, "replay", "--synthesize", spec, "-o", trace], check=True,
                   capture_output=True)
    argv = [run.scheduler, "replay", trace, "--compare", "dbs,static", "--report", report, "--json"]
    load = records.load_average()
    start = time.monotonic()
    with open(run.scratch / "replay.json", "w") as out:
        proc = subprocess.Popen([str(a) for a in argv], stdout=out, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise Failure(f"{command_text(argv)} exited {os.waitstatus_to_exitcode(status)}: "
                      f"{proc.stderr.read().decode().strip()[-300:]}")
    j = json.loads((run.scratch / "replay.json").read_text())
    fields = {"ranks": 1000, "epochs": len(j["dbs"]["epochs"]),
              "trace_mb": round(trace.stat().st_size / 1e6, 1), "wall_s": round(wall, 3),
              "cpu_s": round(usage.ru_utime + usage.ru_stime, 3),
              "rss_mb": round(usage.ru_maxrss / 1024, 1),
              "speedup_dbs_over_static": round(j["dbs"]["speedup_vs_static"], 3)}
    # As the replay page writes it: the trace of big.jsonl made from the spec.
    command = "dbs-scheduler replay big.jsonl --compare dbs,static --report big.html"
    return [run.record("replay-1000-ranks", command, fields, load)]


BENCHMARKS = {"engine": bench_engine, "daemon": bench_daemon, "exchange": bench_exchange,
              "filter": bench_filter, "replay": bench_replay}


def key_of(record, study):
    return (record["study"],) + tuple(json.dumps(record.get(k)) for k in study.key)


def combine(runs):
    """The records of N runs of one benchmark as one record per key: figures are the medians,
    "runs" keeps every value, the load is the range over the runs."""
    if len(runs) == 1:
        return runs[0]
    out = []
    for i, first in enumerate(runs[0]):
        same = [r[i] for r in runs]
        merged = dict(first)
        study = STUDIES[first["study"]]
        merged["runs"] = {}
        for name, _, _ in study.figures:
            values = [records.figure(r, name) for r in same]
            if any(v is None for v in values):
                continue
            merged["runs"][name] = values
            set_figure(merged, name, statistics.median(values))
        loads = [x for r in same for x in r["load"] if x is not None]
        merged["load"] = [min(loads), max(loads)] if loads else [None, None]
        out.append(merged)
    return out


def set_figure(record, name, value):
    *path, last = name.split(".")
    for part in path:
        record[part] = dict(record[part])
        record = record[part]
    record[last] = value


def tolerance(old, new, name, kind):
    """(tolerance, where it came from) of one figure."""
    spreads = [(records.spread(r["runs"][name]), len(r["runs"][name]))
               for r in (old, new) if r and name in r.get("runs", {}) and len(r["runs"][name]) >= 3]
    if spreads:
        value, n = max(spreads)
        return max(value, 0.01), f"spread of {n} runs"
    return DEFAULT_TOLERANCE[kind], f"default for {kind}"


def label(record, study):
    parts = [record["study"]] + [f"{k}={record.get(k)}" for k in study.key if k != "command"]
    if "command" in study.key:
        parts.append(record["command"].replace("dbs-bench scheduler ", ""))
    return " ".join(parts)


def number(value):
    if value is None:
        return "-"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"


def cpu_of(record):
    return record.get("machine", {}).get("cpu")


def compare(new_records, results):
    """Prints every figure beside the committed record in `results`; returns how many moved
    beyond their tolerance (worse, better) and the CPU models of the committed records that
    were measured on another CPU than this run's, whose figures other than counts are shown but
    not judged."""
    committed = {}
    for study in STUDIES.values():
        for r in records.read_jsonl(study.path(results)):
            if r.get("study") == study.name:
                committed[key_of(r, study)] = r  # the latest wins
    rows, worse, better, other_cpus = [], 0, 0, set()
    for new in new_records:
        study = STUDIES[new["study"]]
        old = committed.get(key_of(new, study))
        other_cpu = old is not None and cpu_of(old) != cpu_of(new)
        for name, direction, kind in study.figures:
            now = records.figure(new, name)
            then = records.figure(old, name) if old else None
            tol, source = tolerance(old, new, name, kind)
            ratio = now / then if now is not None and then else None
            mark = ""
            if ratio is not None and other_cpu and kind != "count":
                mark = "other CPU"
                other_cpus.add(cpu_of(old) or "an unnamed CPU")
            elif ratio is not None and abs(ratio - 1) > tol:
                got_better = (ratio > 1) == (direction == "higher")
                mark = "better" if got_better else "WORSE"
                better += got_better
                worse += not got_better
            when = (old.get("date", "")[:10] or "undated") if old else "no record"
            rows.append((label(new, study), name, number(then), when, number(now),
                         f"{ratio:.2f}x" if ratio is not None else "-", f"±{tol:.0%} ({source})", mark))
    header = ("record", "figure", "committed", "of", "now", "ratio", "tolerance", "")
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    for row in [header] + rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip())
    return worse, better, sorted(other_cpus)


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="tests/run.sh --bench",
        description="Runs the headline benchmarks and prints each figure beside the committed "
                    "record (docs/results/*.jsonl) as a ratio, marking changes beyond the "
                    "tolerance.",
        epilog="Example: tests/run.sh --bench --only engine,daemon --runs 3")
    p.add_argument("--build", default="build", help="the build directory (default: build)")
    p.add_argument("--only", default=",".join(BENCHMARKS),
                   help="benchmarks to run, comma-separated (default: all of "
                        + ", ".join(BENCHMARKS) + ")")
    p.add_argument("--runs", type=int, default=1,
                   help="run each benchmark this many times; records keep the medians and every "
                        "value, whose spread is the tolerance (default: 1)")
    p.add_argument("--out", default="out/bench",
                   help="where the run's records are written, run-DATE.jsonl (default: out/bench)")
    p.add_argument("--results", default=str(RESULTS),
                   help="the committed records to compare with and to --save to (default: "
                        "docs/results)")
    p.add_argument("--save", action="store_true",
                   help="also append the records to docs/results/ and regenerate the results "
                        "tables (bench/tables.py --write)")
    args = p.parse_args(argv)
    chosen = [b for b in args.only.split(",") if b]
    unknown = [b for b in chosen if b not in BENCHMARKS]
    if unknown or not chosen:
        p.error(f"--only: unknown benchmark(s) {', '.join(unknown) or '(none given)'}; "
                f"choose from {', '.join(BENCHMARKS)}")
    if args.runs < 1:
        p.error(f"--runs: must be >= 1, got {args.runs}")
    args.only = chosen
    return args


def main(argv):
    args = parse_args(argv)
    build = Path(args.build)
    build = (build if build.is_absolute() else records.SOURCE / build).resolve()
    failed, new_records = [], []
    with tempfile.TemporaryDirectory(prefix="dbs-bench-") as scratch:
        try:
            run = Run(build, Path(scratch))
        except Failure as e:
            print(f"bench: {e}", file=sys.stderr)
            return 1
        m = run.facts["machine"]
        print(f"machine: {m['cpu']}, {m['logical_cpus']} logical CPUs, "
              f"{' '.join(m['vector_flags'])}; FMA peak {m['peak_gflops_per_core']} GFLOP/s per "
              f"core ({m['peak_gflops_per_cpu_s']} per CPU second); commit {run.facts['commit']}; "
              f"load {records.load_average()}", flush=True)
        for name in args.only:
            start = time.monotonic()
            try:
                runs = [BENCHMARKS[name](run) for _ in range(args.runs)]
            except (Failure, subprocess.SubprocessError, OSError, KeyError, ValueError) as e:
                print(f"bench {name}: FAILED: {e}", flush=True)
                failed.append(name)
                continue
            new_records += combine(runs)
            print(f"bench {name}: {time.monotonic() - start:.0f} s", flush=True)
    out_dir = Path(args.out)
    out_dir = out_dir if out_dir.is_absolute() else records.SOURCE / out_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    out_file = out_dir / f"run-{run.facts['date'].replace(':', '')}.jsonl"
    records.append_jsonl(out_file, new_records)
    print()
    results = Path(args.results).resolve()
    worse, better, other_cpus = compare(new_records, results)
    if other_cpus:
        print(f"\nother CPU: committed on {'; '.join(other_cpus)}, this run on "
              f"{run.facts['machine']['cpu']}. Times, rates and fractions of the peak are shown, "
              f"not judged; counts are. Re-measure here with --save to judge later runs here.")
    print(f"\n{len(new_records)} record(s) in {out_file}; beyond the tolerance: {worse} worse, "
          f"{better} better; failed: {', '.join(failed) or 'none'}")
    if args.save and new_records:
        for study in STUDIES.values():
            mine = [r for r in new_records if r["study"] == study.name]
            if mine:
                records.append_jsonl(study.path(results), mine)
                print(f"saved {len(mine)} record(s) of {study.name} to {study.path(results)}")
        subprocess.run([sys.executable, str(records.SOURCE / "bench" / "tables.py"), "--write",
                        "--root", str(results.parent.parent)], check=False)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
