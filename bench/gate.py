#!/usr/bin/env python3
"""The regression gate: figures that a shared, busy machine does not move, against the committed
baseline (docs/results/regression-gate.jsonl, one record per baseline run).

  gate.py [--build DIR]   measure once and compare: exit 1 naming every figure worse than its
                          bound, 0 otherwise; then check that the same measurement with any one
                          figure made 2x worse is refused (exit 1 if it is not)
  gate.py --doctored      no measuring: every run of the baseline passes, and the baseline's
                          median with any one figure 2x worse fails, naming that figure
  gate.py --save N        measure N times and write the baseline (after a change that moves a
                          figure on purpose; the commit says why)

The figures (FIGURES): allocations per report of the daemon and per plan of a 10,000-rank job
(operator new counted per thread by dbs-bench), instructions per report of the daemon and per
rank of planning a 1,000-rank job (valgrind --tool=callgrind, counting only inside
scheduler::Daemon::run and scheduler::Job::plan), and the training step's fraction of the FMA
peak, both measured per CPU second (dbs-bench train, cnn, 1 thread; the better of two runs, as
another process can only lower it).

A figure's bound is the baseline's median times (1 + tolerance), or divided by it where higher is
better. The tolerance is three times the largest relative distance of a baseline run from that
median, at least MIN_TOLERANCE; a figure whose tolerance would exceed MAX_TOLERANCE is too noisy
to catch a 2x regression and is left out of the gate (--save says so). CPU-time figures are
compared only on the baseline's CPU model; counts of allocations and instructions on any machine.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import records  # noqa: E402

BASELINE = records.SOURCE / "docs" / "results" / "regression-gate.jsonl"
MIN_TOLERANCE = 0.25  # small changes of the code's own cost pass
MAX_TOLERANCE = 0.6   # bound below 2x: a figure twice as bad always fails
NOISE_FACTOR = 3      # tolerance = NOISE_FACTOR x the baseline's largest relative deviation

# name: (which way is better, kind: "count" holds on any machine, "cpu" on the same CPU model)
FIGURES = {
    "daemon_allocations_per_report": ("lower", "count"),
    "plan_allocations": ("lower", "count"),
    "daemon_instructions_per_report": ("lower", "count"),
    "plan_instructions_per_rank": ("lower", "count"),
    "train_peak_fraction_cpu": ("higher", "cpu"),
}

LOAD = ["scheduler", "--agents", "32", "--world", "16", "--reports", "100", "--plan-ranks", "10000"]
DAEMON_CG = ["scheduler", "--agents", "16", "--world", "16", "--reports", "30", "--plan-ranks", "1"]
PLAN_RANKS, PLAN_ROUNDS = 1000, 5  # dbs-bench scheduler times 5 plans of the --plan-ranks job
PLAN_CG = ["scheduler", "--agents", "1", "--world", "1", "--reports", "1", "--plan-ranks", str(PLAN_RANKS)]
TRAIN = ["train", "--model", "cnn", "--batch", "128", "--steps", "8", "--warmup", "2", "--threads", "1"]


class GateError(Exception):
    """A measurement that could not be made, or a baseline that cannot be read."""


# The measured programs run without MALLOC_PERTURB_ (meson test sets it at random): glibc then
# fills every allocation, which adds instructions in proportion to the bytes allocated.
ENV = {k: v for k, v in os.environ.items() if k != "MALLOC_PERTURB_"}


def run_json(argv):
    run = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=600,
                         env=ENV)
    if run.returncode != 0:
        raise GateError(f"{' '.join(map(str, argv))} exited {run.returncode}: {run.stderr.strip()[-400:]}")
    return json.loads(run.stdout)


def instructions(bench, argv, function):
    """Instructions executed inside `function` (and what it calls) while dbs-bench runs argv,
    and dbs-bench's JSON."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise GateError("valgrind is not installed (Debian: valgrind; tests/run.sh installs it)")
    with tempfile.TemporaryDirectory(prefix="dbs-gate-") as tmp:
        out = Path(tmp) / "callgrind.out"
        run = subprocess.run([valgrind, "--tool=callgrind", f"--callgrind-out-file={out}",
                              f"--toggle-collect={function}", str(bench), *argv],
                             capture_output=True, text=True, timeout=600, env=ENV)
        if run.returncode != 0:
            raise GateError(f"callgrind of dbs-bench {' '.join(argv)} exited {run.returncode}: "
                            f"{run.stderr.strip()[-400:]}")
        total = None
        for line in out.read_text().splitlines():
            if line.startswith("totals:") or line.startswith("summary:"):
                total = int(line.split()[1])
        if not total:
            raise GateError(f"callgrind counted no instructions in {function}: was it renamed?")
        return total, json.loads(run.stdout)


def measure(build):
    """One gate measurement: a record of FIGURES with the machine's facts."""
    bench = build / "bench" / "dbs-bench"
    if not bench.exists():
        raise GateError(f"{bench} does not exist: build it first")
    load_before = records.load_average()
    load = run_json([bench, *LOAD])
    daemon_ir, daemon = instructions(bench, DAEMON_CG, "*Daemon::run*")
    plan_ir, _ = instructions(bench, PLAN_CG, "*Job::plan*")
    train = max((run_json([bench, *TRAIN]) for _ in range(2)), key=lambda j: j["peak_fraction_cpu"])
    figures = {
        "daemon_allocations_per_report": load["daemon_allocations_per_report"],
        "plan_allocations": load["plan_allocations"],
        "daemon_instructions_per_report": round(daemon_ir / daemon["reports"]),
        "plan_instructions_per_rank": round(plan_ir / (PLAN_ROUNDS * PLAN_RANKS)),
        "train_peak_fraction_cpu": round(train["peak_fraction_cpu"], 4),
    }
    peak = {"gflops_per_core": train["peak_gflops_per_core"],
            "gflops_per_cpu_s": train["peak_gflops_per_cpu_s"]}
    return {"study": "regression-gate", **figures,
            "command": "bench/gate.py: dbs-bench " + "; dbs-bench ".join(
                " ".join(a) for a in (LOAD, DAEMON_CG, PLAN_CG, TRAIN)),
            "date": records.now_utc(), "commit": records.commit(),
            "machine": records.machine_facts(peak),
            "load": [load_before, records.load_average()]}


class Bound:
    def __init__(self, name, values):
        self.name = name
        self.better, self.kind = FIGURES[name]
        self.median = statistics.median(values)
        deviation = max(abs(v / self.median - 1) for v in values) if self.median else 0.0
        self.tolerance = max(MIN_TOLERANCE, NOISE_FACTOR * deviation)
        self.gated = self.tolerance <= MAX_TOLERANCE
        self.runs = len(values)
        self.limit = (self.median * (1 + self.tolerance) if self.better == "lower"
                      else self.median / (1 + self.tolerance))

    def passes(self, value):
        return value <= self.limit if self.better == "lower" else value >= self.limit


def read_baseline():
    """The baseline runs: the records of study "regression-gate" (the file also keeps the
    series that showed which figures a busy machine moves)."""
    return [r for r in records.read_jsonl(BASELINE) if r.get("study") == "regression-gate"]


def bounds_of(baseline):
    """{figure: Bound} of the baseline runs."""
    if not baseline:
        raise GateError(f"{BASELINE} has no records: measure them with gate.py --save N")
    out = {}
    for name in FIGURES:
        values = [r[name] for r in baseline if isinstance(r.get(name), (int, float))]
        if not values:
            raise GateError(f"{BASELINE}: no record has the figure {name}")
        out[name] = Bound(name, values)
    return out





def judge(record, baseline, quiet=False):
    """The figures of the record that fail their bound (names). Prints a line per figure."""
    same_cpu = all(r.get("machine", {}).get("cpu") == record.get("machine", {}).get("cpu")
                   for r in baseline)
    failed = []
    for name, b in bounds_of(baseline).items():
        value = record.get(name)
        if not b.gated:
            verdict = f"not gated (tolerance {b.tolerance:.0%} from the baseline's spread)"
        elif b.kind == "cpu" and not same_cpu:
            verdict = "not compared: the baseline was measured on another CPU model"
        elif not isinstance(value, (int, float)):
            verdict = "FAIL: not measured"
            failed.append(name)
        elif b.passes(value):
            ratio = value / b.median
            verdict = f"ok ({ratio:.3f}x the baseline)"
            if abs(ratio - 1) > b.tolerance:
                verdict += f"; better than the baseline beyond the tolerance: record it with --save"
        else:
            verdict = f"FAIL: {value / b.median:.3f}x the baseline, bound {b.limit:.6g}"
            failed.append(name)
        if not quiet:
            sign = "<=" if b.better == "lower" else ">="
            print(f"  {name:32} {value if value is not None else '-':>12}  baseline {b.median:.6g} "
                  f"({b.runs} runs), {sign} {b.limit:.6g} (±{b.tolerance:.0%}): {verdict}")
    return failed


def doubled(record, name):
    """The record with one figure twice as bad."""
    worse = dict(record)
    worse[name] = record[name] * 2 if FIGURES[name][0] == "lower" else record[name] / 2
    return worse


def check_doctored(record, baseline, what):
    """Every figure of the record made 2x worse must fail the gate, naming that figure."""
    wrong = []
    for name, b in bounds_of(baseline).items():
        if not b.gated or (b.kind == "cpu" and "machine" in record and
                           any(r.get("machine", {}).get("cpu") != record["machine"].get("cpu")
                               for r in baseline)):
            continue
        failed = judge(doubled(record, name), baseline, quiet=True)
        if failed != [name]:
            wrong.append(f"{what} with {name} 2x worse: the gate failed {failed or 'nothing'}")
    return wrong


def main(argv):
    p = argparse.ArgumentParser(prog="bench/gate.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default=os.environ.get("DBS_BUILD", "build"),
                   help="the build directory (default: $DBS_BUILD or build)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--doctored", action="store_true",
                      help="check the gate against the baseline and doctored copies of it")
    mode.add_argument("--save", type=int, metavar="N",
                      help="measure N times (at least 3) and write the baseline")
    args = p.parse_args(argv)
    build = Path(args.build)
    build = (build if build.is_absolute() else records.SOURCE / build).resolve()
    try:
        if args.save is not None:
            if args.save < 3:
                p.error(f"--save: at least 3 runs make a spread, got {args.save}")
            runs = []
            for i in range(args.save):
                runs.append(measure(build))
                print(f"run {i + 1}: " + ", ".join(f"{n} {runs[-1][n]}" for n in FIGURES), flush=True)
            others = [r for r in records.read_jsonl(BASELINE) if r.get("study") != "regression-gate"]
            BASELINE.write_text("".join(json.dumps(r) + "\n" for r in runs + others))
            for b in bounds_of(runs).values():
                print(f"{b.name}: median {b.median:.6g}, tolerance ±{b.tolerance:.0%}"
                      + ("" if b.gated else " - too noisy, not gated"))
            print(f"wrote {BASELINE}")
            return 0
        baseline = read_baseline()
        if args.doctored:
            problems = []
            for i, run in enumerate(baseline, 1):
                print(f"baseline run {i}:")
                if judge(run, baseline):
                    problems.append(f"baseline run {i} fails the gate built from it")
            median = {n: b.median for n, b in bounds_of(baseline).items()}
            median["machine"] = baseline[-1].get("machine", {})
            problems += check_doctored(median, baseline, "the baseline's median")
            for line in problems:
                print("FAIL: " + line)
            print(f"{len(baseline)} baseline runs pass; each figure 2x worse fails"
                  if not problems else f"{len(problems)} problem(s)")
            return 1 if problems else 0
        record = measure(build)
        print(f"measured on {record['machine']['cpu']}, load {record['load']}:")
        failed = judge(record, baseline)
        problems = check_doctored(record, baseline, "this measurement")
        for line in problems:
            print("FAIL: " + line)
        if failed:
            print(f"regression gate: {len(failed)} figure(s) worse than the baseline's bound: "
                  + ", ".join(failed))
        return 1 if failed or problems else 0
    except (GateError, records.RecordError, subprocess.TimeoutExpired) as e:
        print(f"gate: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
