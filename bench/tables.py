#!/usr/bin/env python3
"""The results tables, made from the committed records (docs/results/*.jsonl), never typed.

  tables.py --check   exit 1 naming every generated region of README.md and docs/results/*.md
                      that differs from what the records make, and every table of a page's
                      "Current table" section that is neither generated nor marked as typed
  tables.py --write   rewrite the generated regions from the records

A generated region is

  <!-- table: NAME -->
  ...
  <!-- end table -->

where NAME is one of TABLES; everything between the two lines is the generator's. A table that
has no records to be made from says so on the line above it: <!-- typed table: why -->.

Where a region's records carry the commit they were measured at, the region ends with a line
naming the commit and the machine; if the code the figures measure (CODE) has changed since
that commit, the line says so until the figures are measured again (tests/run.sh --bench
--save). Records older than benchmark runs carry no commit; their regions say that too.
"""
import argparse
import difflib
import functools
import re
import statistics
import subprocess
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import records  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lab" / "experiments"))
import replay_accuracy  # noqa: E402  (the replay accuracy study makes its own table)
import local_sgd_report  # noqa: E402  (and the local SGD study its own)
import scale  # noqa: E402  (and the scale study its own)
import pytorch_exchange  # noqa: E402  (and the PyTorch exchange study its own)
import balance_set  # noqa: E402  (the balance study's targets)

ROOT = records.SOURCE  # the tree whose pages and records are read (--root)
RESULTS = ROOT / "docs" / "results"

# The code whose speed a study's figures measure: where it changed since the record's commit,
# the figures are not current.
CODE = {
    "engine-train": ["lib/nn", "lib/optim", "bench/train_bench.cpp", "bench/peak.cpp"],
    "scheduler-load": ["scheduler/serve", "lib/proto", "lib/net", "lib/policy",
                       "bench/scheduler_bench.cpp"],
    "scheduler-plan": ["scheduler/serve", "lib/proto", "lib/policy", "bench/scheduler_bench.cpp"],
    "scheduler-soak": ["scheduler/serve", "lib/proto", "lib/net", "lib/auth", "lib/policy",
                       "tests/soak"],
    "exchange-shm": ["lib/comm", "bench/allreduce_bench.cpp"],
    "filter-bench": ["lib/filter", "bench/filter_bench.cpp"],
    "replay-1000-ranks": ["scheduler/replay", "lib/replay", "lib/policy", "lib/trace"],
    # dbs.torch's timing and planning, and the script the study runs
    "pytorch-speed": ["python/dbs", "examples/pytorch", "lib/api", "lib/policy", "lib/common"],
}


class TableError(Exception):
    """Records that cannot make a table: the message names the file and what is missing."""


def load(name):
    return records.read_jsonl(RESULTS / name)


def study(file, name, **match):
    """The records of a study in a file (in file order), those whose fields equal `match`."""
    out = [r for r in load(file) if r.get("study") == name
           and all(r.get(k) == v for k, v in match.items())]
    if not out:
        raise TableError(f"docs/results/{file}: no record of study {name!r} with {match}")
    return out


def latest(file, name, **match):
    return study(file, name, **match)[-1]


# ---------------------------------------------------------------------------------------------
# number formats, as the pages write them

def thousands(x):
    return f"{x:,.0f}"


def sig3(x):
    """Three significant digits, thousands separated: 99,700; 44,100; 5.9 -> 5.90."""
    from math import floor, log10
    if x == 0:
        return "0"
    digits = 2 - int(floor(log10(abs(x))))
    value = round(x, digits)
    return f"{value:,.{max(digits, 0)}f}"


def fixed(x, n):
    return f"{x:.{n}f}"


def pct(x, n=2):
    """A fraction as a percentage with n decimals."""
    return f"{x * 100:.{n}f}"


def span(values, fmt, unit=""):
    """"lo–hi" of the values (one figure where both read the same), then the unit."""
    lo, hi = fmt(min(values)), fmt(max(values))
    return (lo if lo == hi else f"{lo}–{hi}") + unit


def table(header, rows, align=None):
    align = align or ["---"] * len(header)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    lines += ["|" + "|".join(f" {c} " if str(c) else " " for c in row) + "|" for row in rows]
    return lines


def prose(text):
    """A paragraph wrapped as the pages wrap theirs, at 100 columns."""
    return textwrap.wrap(text, width=100, break_long_words=False, break_on_hyphens=False)


def values(record, name):
    """A figure's values: the list of runs where the record kept them, else the one value."""
    runs = record.get("runs", {}).get(name)
    if runs:
        return runs
    v = record.get(name)
    return v if isinstance(v, list) else [v]


# ---------------------------------------------------------------------------------------------
# provenance

def provenance(recs, studies):
    """The lines under a benchmark table: when and on what machine its records were measured,
    and whether the code they measure has changed since (the records keep the commit)."""
    old = [r for r in recs if r.get("commit") in (None, "unknown")]
    new = [r for r in recs if r not in old]
    before = ("Measured before benchmark records carried their commit; the code may have changed "
              "since (re-measure with `tests/run.sh --bench --save`).")
    if not new:
        return [""] + prose(before)
    commits = sorted({r["commit"] for r in new})
    dates = sorted({r["date"][:10] for r in new})
    m = new[-1]["machine"]
    loads = [x for r in new for x in r.get("load", []) if x is not None]
    line = (f"Measured {', '.join(dates)} on "
            f"{m['cpu']} ({m['logical_cpus']} logical CPUs, {' '.join(m['vector_flags'])}; "
            f"FMA peak {m['peak_gflops_per_core']} GFLOP/s per core)"
            + (f", load average {max(loads):.1f} at most." if loads else "."))
    changed = sorted({p for c in commits for s in studies for p in changed_since(c, CODE[s])})
    if changed:
        line += (f" **The code measured has changed since** ({', '.join(changed)}): not "
                 "re-measured yet.")
    if old:
        line += f" The other {len(old)} row(s): " + before[0].lower() + before[1:]
    return [""] + prose(line)


def stale(record, name):
    """Whether a benchmark record may not hold for the code as it is: measured before records
    carried their commit, or the code it measures has changed since."""
    commit = record.get("commit")
    return not commit or commit == "unknown" or bool(changed_since(commit, CODE[name]))


def as_measured(text, name, *records):
    """A README answer from benchmark records of study `name`, marked where one is stale."""
    stale_one = any(stale(r, name) for r in records)
    return text + ("; measured on older code, see the page" if stale_one else "")


def changed_since(commit, paths):
    """The paths (of `paths`) that differ between the commit and this repository's work tree
    (the code's; --root moves only the pages and records)."""
    base = commit.split("+")[0]
    dirty = commit.endswith("+dirty")
    run = subprocess.run(["git", "diff", "--name-only", base, "--", *paths], cwd=records.SOURCE,
                         capture_output=True, text=True)
    if run.returncode != 0:
        return [f"commit {base[:10]} is not in this repository"]
    changed = {p for p in paths for f in run.stdout.split() if f == p or f.startswith(p + "/")}
    if dirty:
        changed.add("uncommitted changes when measured")
    return sorted(changed)


# ---------------------------------------------------------------------------------------------
# the tables

def engine_train():
    rows, recs = [], []
    one = latest("engine.jsonl", "engine-train", threads=1)
    for threads in (1, 2):
        r = latest("engine.jsonl", "engine-train", threads=threads)
        recs.append(r)
        ips = thousands(r["images_per_s"])
        if threads > 1:
            ips += f" ({r['images_per_s'] / one['images_per_s']:.2f}×)"
        # GFLOP/s at the model's count where the record has it; a record of several runs keeps
        # each figure's median, and the median GFLOP/s may be another run's than the images/s
        gflops = (r["images_per_s"] * r["train_mflop_per_sample"] / 1e3
                  if "train_mflop_per_sample" in r else r["gflops"])
        rows.append((threads, ips, fixed(gflops, 1), fixed(r["peak_fraction"], 2)))
    mflop = one.get("train_mflop_per_sample") or one["gflops"] * 1e3 / one["images_per_s"]
    peak = one.get("peak_gflops_per_core") or one["gflops"] / one["peak_fraction"]
    return (prose(f"{mflop:.1f} MFLOP per training sample by the analytic count; measured fp32 "
                  f"FMA peak {peak:.0f} GFLOP/s per core:") + [""]
            + table(["threads", "images/s", "GFLOP/s", "fraction of peak"], rows)
            + provenance(recs, ["engine-train"]))


SCHEDULER_ROWS = [  # (command, what the row is)
    ("dbs-bench scheduler --agents 256 --reports 200", "(daemon in memory)"),
    ("dbs-bench scheduler --agents 256 --reports 200 --state-dir DIR",
     "(journal synced per epoch)"),
    ("dbs-bench scheduler --agents 4000 --reports 20",
     "(4,000 connections, no pause between epochs)"),
    ("dbs-bench scheduler --agents 4000 --reports 20 --epoch-ms 100", ""),
    ("dbs-bench scheduler --agents 4000 --reports 20 --epoch-ms 100 --state-dir DIR", ""),
]


def ms(x):
    """Milliseconds: two significant digits below 10 ms, whole ones above."""
    return f"{x:.2g}" if x < 10 else f"{x:.0f}"


def scheduler_load():
    rows, recs = [], []
    for command, what in SCHEDULER_ROWS:
        r = latest("scheduler-load.jsonl", "scheduler-load", command=command)
        recs.append(r)
        args = command.replace("dbs-bench scheduler ", "")
        rows.append((f"`{args}` {what}".rstrip(), sig3(r["reports_per_s"]), ms(r["p50_ms"]),
                     ms(r["p99_ms"]), r.get("protocol_version", "–")))
    return (table(["`dbs-bench scheduler ...`", "reports/s", "p50 ms", "p99 ms", "protocol"],
                  rows, ["---", "---:", "---:", "---:", "---:"])
            + provenance(recs, ["scheduler-load"]))


def scheduler_plan():
    r = latest("scheduler-load.jsonl", "scheduler-plan", plan_ranks=10000)
    encode = r["plan_encode_ms"]
    encode = encode.replace("-", " to ") if isinstance(encode, str) else ms(encode)
    text = (f"One job of {thousands(r['plan_ranks'])} ranks (protocol version "
            f"{r['protocol_version']}): planning {ms(r['plan_ms'])} ms")
    if "plan_cpu_ms" in r:
        text += (f" ({ms(r['plan_cpu_ms'])} ms of CPU, {thousands(r['plan_allocations'])} "
                 "allocations)")
    text += (f"; each rank gets a {r['plan_message_bytes']}-byte share, and the "
             f"{thousands(r['plan_ranks'])} shares take {encode} ms to encode.")
    return prose(text) + provenance([r], ["scheduler-plan"])


EXCHANGES = [
    ("allreduce", "allreduce (the training's default)"),
    ("ring", "ring (`--allreduce ring`)"),
    ("sharded", "sharded (asleep: the ring's halves)"),
    ("overlap", "overlap (one started allreduce, then finished)"),
]


def exchange_shm():
    rows, recs = [], []
    for name, what in EXCHANGES:
        r = latest("exchange.jsonl", "exchange-shm", exchange=name)
        recs.append(r)
        rows.append((what, ", ".join(f"{v:.0f}" for v in values(r, "asleep_median_us")),
                     ", ".join(f"{v:.0f}" for v in values(r, "spinning_median_us"))))
    return table(["exchange", "asleep", "spinning"], rows) + provenance(recs, ["exchange-shm"])


def filter_speed():
    r = latest("filter-bench.jsonl", "filter-bench")
    t, d = r["tsne"], r["dbscan"]

    def met(seconds, goal):
        return "met" if seconds < goal else "**not met**"
    rows = [("t-SNE", f"**{t['total_s']:.1f} s** ({t['cpu_s']:.0f} s of CPU; neighbours "
                      f"{t['neighbours_s']:.1f} s, affinities {t['affinity_s']:.1f} s, "
                      f"optimisation {t['optimise_s']:.1f} s)",
             f"under 2 min: {met(t['total_s'], t['goal_s'])}"),
            ("DBSCAN", f"**{d['total_s']:.2f} s** ({d['dbscan_s']:.2f} s clustering, "
                       f"{d['knee_eps_s']:.2f} s the knee eps)",
             f"under 1 s: {met(d['total_s'], d['goal_s'])}")]
    return table(["step", "wall", "goal"], rows) + provenance([r], ["filter-bench"])


def study_runs(file, name):
    return [r for r in load(file) if r.get("study") == name]


def configuration(r):
    if r["global_batch"] == r["base_batch"]:
        return f"batch {r['global_batch']}"
    scaling = "linear" if r["lr_scaling"] == "linear" else "no scaling"
    warmup = f"warmup {r['warmup_epochs']:g}" if r["warmup_epochs"] else "no warmup"
    return f"batch {r['global_batch']}, {scaling}, {warmup}"


def peak_lr(r):
    scale = r["global_batch"] / r["base_batch"] if r["lr_scaling"] == "linear" else 1
    return f"{r['lr'] * scale:g}"


def acc(r, epoch):
    return pct(r["epochs"][epoch - 1]["test_acc"])


def filtering_accuracy():
    rows = [(f"{r['data']}, {configuration(r)}", peak_lr(r), acc(r, 2), acc(r, 5),
             pct(r["final_test_acc"])) for r in study_runs("filtering.jsonl", "filtering")]
    return table(["configuration", "peak lr", "epoch 2", "epoch 5", "final"], rows)


def filtering_difference():
    runs = study_runs("filtering.jsonl", "filtering")
    batches = sorted({r["global_batch"] for r in runs})
    final = {(r["data"], r["global_batch"]): r["final_test_acc"] for r in runs}
    rows = [(f"filtered − {other} (points)",
             *[f"{(final[('filtered', b)] - final[(other, b)]) * 100:+.2f}" for b in batches])
            for other in ("full", "random")]
    return table(["data", *[f"batch {b}" for b in batches]], rows)


def convergence():
    runs = study_runs("convergence.jsonl", "convergence")
    base = [r for r in runs if r["policy"] == "static" and not r["disturbed"]][-1]
    names = {"static": "static", "dbs": "dbs (cost model)"}
    rows = []
    for i, r in enumerate(runs):
        name = names.get(r["policy"], f"`{r['policy']}`")
        what = f"{name}, {'rank 1 slowed ×3' if r['disturbed'] else 'undisturbed'}"
        score = f"{pct(r['test_acc'])}%"
        rows.append((what, r.get("plans", "equal split"), score, r))
    order = sorted(range(len(runs)),
                   key=lambda i: (runs[i] is not base, runs[i]["policy"] != "dbs", i))
    rows = [rows[i] for i in order]
    for n, row in enumerate(rows[1:]):  # the difference to the static run; "points" once
        diff = f"{(row[3]['test_acc'] - base['test_acc']) * 100:+.2f}"
        rows[n + 1] = (row[0], row[1],
                       row[2] + (f" ({diff} points)" if n == 0 else f" ({diff})"), None)
    return table(["run", "plans (epochs 1–5)", "test accuracy"], [row[:3] for row in rows])


def exchange_tcp():
    rows, link = [], None
    for r in study_runs("exchange.jsonl", "exchange-tcp"):
        rows.append(("" if r["link"] == link else r["link"], r["exchange"].replace(
            "MPI_Allreduce", "`MPI_Allreduce`"), r["median_ms_eager_64KiB"].replace("-", "–"),
            r["median_ms_eager_4MiB"].replace("-", "–")))
        link = r["link"]
    return table(["link", "exchange", "Open MPI's 64 KiB limit", "4 MiB (dbs's default)"], rows)


def listed(values_):
    return ", ".join(f"{v:.2f}" for v in values_)


def exchange_training():
    names = {"plain": "plain", "overlap": "`--overlap`", "sharded": "`--update sharded`"}
    rows = [(names.get(r["exchange"], r["exchange"]), listed(r["epoch_s_wait_auto"]),
             listed(r["epoch_s_wait_sleep"]))
            for r in study_runs("exchange.jsonl", "exchange-training-200mbit")]
    return table(["exchange", "`--wait auto` (spins here)", "`--wait sleep`"], rows)


def exchange_wait():
    runs = study_runs("exchange.jsonl", "exchange-wait-unlimited")
    rows = []
    for wait, what in (("spin", "spin (what `auto` does here)"), ("sleep", "sleep")):
        ratios = [r["dbs_ratio_to_best_split"] for r in runs if r["wait"] == wait]
        rows.append((what, span(ratios, lambda v: f"{v:.3f}", "×")))
    return table(["`--wait`", "/ best split"], rows)


def exchange_oversubscribed():
    rows, case = [], None
    for r in study_runs("exchange.jsonl", "exchange-wait-oversubscribed"):
        shown = (r["case"].replace("sleep 1/x2/x4", "sleep 1 / ×2 / ×4")
                 .replace("quotas 1.0/0.5/0.25", "quotas 1.0 / 0.5 / 0.25 (`auto`: rank 0 spins)")
                 .replace(" x ", " × "))
        rows.append(("" if r["case"] == case else shown, r["policy"], listed(r["epoch_s_spin"]),
                     listed(r["epoch_s_sleep"])))
        case = r["case"]
    return table(["case", "policy", "spin", "sleep"], rows)


RECIPE_EPOCHS = (1, 2, 5, 10, 14)


def recipe_runs():
    """The recipe's runs by configuration (file order), each a list of runs by seed."""
    groups = {}
    for r in study_runs("recipe.jsonl", "recipe"):
        groups.setdefault(configuration(r) + (", decay ×0.1 at 15" if r["global_batch"] ==
                                              r["base_batch"] else ""), []).append(r)
    return {k: sorted(v, key=lambda r: r["seed"]) for k, v in groups.items()}


def mean_half_range(runs):
    finals = [r["final_test_acc"] for r in runs]
    return f"{pct(statistics.mean(finals))} ± {pct((max(finals) - min(finals)) / 2)}"


def recipe_epochs():
    rows = []
    for name, runs in recipe_runs().items():
        per_seed = lambda f: " / ".join(f(r) for r in runs)  # noqa: E731
        rows.append((name, peak_lr(runs[0]),
                     *[per_seed(lambda r, e=e: acc(r, e)) for e in RECIPE_EPOCHS],
                     per_seed(lambda r: pct(r["final_test_acc"])), mean_half_range(runs)))
    return table(["configuration", "peak lr", *[f"epoch {e}" for e in RECIPE_EPOCHS], "final",
                  "final mean ± ½ range"], rows)


def recipe_final():
    large = [runs for runs in recipe_runs().values()
             if runs[0]["global_batch"] > runs[0]["base_batch"]]
    warmups = sorted({runs[0]["warmup_epochs"] for runs in large})
    rows = []
    for w in warmups:
        cell = {runs[0]["lr_scaling"]: mean_half_range(runs) for runs in large
                if runs[0]["warmup_epochs"] == w}
        rows.append((f"{w:g}", cell.get("none", "-"), cell.get("linear", "-")))
    return table(["warmup epochs", "no scaling", "linear scaling"], rows)


GATE_FIGURES = {  # what each gated figure is, as the benchmarks page words it
    "daemon_allocations_per_report": "daemon allocations per report",
    "plan_allocations": "allocations to plan a 10,000-rank job",
    "daemon_instructions_per_report": "daemon instructions per report",
    "plan_instructions_per_rank": "instructions per rank to plan a 1,000-rank job",
    "train_peak_fraction_cpu": "training step, fraction of the FMA peak per CPU second",
}


def g4(x):
    """Four significant digits below 1,000, whole numbers with separators above."""
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"


def regression_gate():
    import gate
    runs = study_runs("regression-gate.jsonl", "regression-gate")
    if not runs:
        raise TableError("docs/results/regression-gate.jsonl has no records")
    rows = []
    for name, b in gate.bounds_of(runs).items():
        vals = [r[name] for r in runs]
        rows.append((GATE_FIGURES.get(name, name), b.better, g4(b.median),
                     span(vals, g4), f"±{b.tolerance:.0%}" + ("" if b.gated else " (not gated)"),
                     f"{'≤' if b.better == 'lower' else '≥'} {g4(b.limit)}",
                     "same CPU model" if b.kind == "cpu" else "any"))
    loads = [x for r in runs for x in r["load"] if x is not None]
    dates = sorted({r["date"][:10] for r in runs})
    return (table(["figure", "better", "baseline median", "range of the runs", "tolerance", "bound",
                   "compared on"], rows, ["---", "---", "---:", "---:", "---:", "---:", "---"])
            + [""] + prose(f"{len(runs)} baseline runs ({', '.join(dates)}, "
                           f"{runs[-1]['machine']['cpu']}, "
                           f"{runs[-1]['machine']['logical_cpus']} logical CPUs), the 1-minute "
                           f"load average {min(loads):.1f}–{max(loads):.1f} while they ran."))


def gate_candidates():
    """The spread of the figures the gate leaves out, beside the one it keeps."""
    runs = study_runs("regression-gate.jsonl", "regression-gate-candidates")
    if not runs:
        raise TableError("docs/results/regression-gate.jsonl: no regression-gate-candidates "
                         "records")
    figures = [("daemon CPU per report, µs", "daemon_cpu_us_per_report", "no"),
               ("plan of a 10,000-rank job, ms of CPU", "plan_cpu_ms", "no"),
               ("plan of a 10,000-rank job, ms wall", "plan_ms", "no"),
               ("reports/s (32 agents)", "reports_per_s", "no"),
               ("training step, fraction of the peak per wall second", "train_peak_fraction", "no"),
               ("training step, fraction of the peak per CPU second", "train_peak_fraction_cpu",
                "yes"),
               ("daemon allocations per report", "daemon_allocations_per_report", "yes"),
               ("allocations to plan a 10,000-rank job", "plan_allocations", "yes")]
    rows = []
    for what, name, gated in figures:
        vals = [r[name] for r in runs]
        rows.append((what, span(vals, g4), f"{max(vals) / min(vals):.3f}×", gated))
    loads = [r["load"][0] for r in runs]
    return (prose(f"{len(runs)} runs of one measurement each, back to back, the 1-minute load "
                  f"average {min(loads):.1f}–{max(loads):.1f}:") + [""]
            + table(["figure", "range of the runs", "largest / smallest", "gated"], rows,
                    ["---", "---:", "---:", "---"]))


REPLAY_TRACES = {  # what each recorded trace shows (traces/README.md says how it was recorded)
    "undisturbed-dbs": "no disturbance: dbs keeps the equal split all run",
    "constant-dbs": "rank 1 slowed ×3 from the start",
    "constant-static": "the same disturbance under the equal split",
    "transient-dbs": "rank 1 slowed ×3 from epoch 2.5 to 4.5",
    "transient-rebalance": "the same with re-plans every 12 steps",
    "constant-dbs-cost": "as `constant-dbs`, planned by the cost model",
    "transient-dbs-cost": "as `transient-dbs`, planned by the cost model",
}


def replay_error(r):
    return float(r["replay_error"].rstrip("%"))


def replay_checks():
    own = study_runs("replay.jsonl", "replay-own-trace")
    exact = [r for r in own if replay_error(r) == 0]
    worst = max(abs(replay_error(r)) for r in own)
    fit = latest("replay.jsonl", "replay-cross-fit")
    accuracy = replay_accuracy.summarize(study("replay.jsonl", "replay-accuracy"))
    accuracy_met = sum(replay_accuracy.verdict(r)[0] != "no" for r in accuracy)
    analytic = latest("replay.jsonl", "replay-analytic")
    big = latest("replay.jsonl", "replay-1000-ranks")
    words = {6: "six", 7: "seven"}
    rows = [
        ("own policy, own trace", "`replay traces/<name>.jsonl` for the "
         f"{words.get(len(own), len(own))} recorded traces",
         f"within {worst:.1f}% of the recorded totals ({exact and '0.0%'} for the "
         f"{words.get(len(exact), len(exact))} that re-plan per epoch, whose plans are reproduced "
         "in every epoch)"),
        ("cost fitted on another run", "the same with `--latency --bandwidth --overhead` fitted on "
         "each other trace", f"within {fit['max_abs_error_pct']:.1f}%"),
        ("another policy, real runs", "`lab/experiments/replay_accuracy.py`: static and dbs runs "
         "alternated, each trace replayed under the other policy",
         f"{accuracy_met} of {len(accuracy)} mean predictions within 3% of the mean recorded total "
         "or the recorded spread ([below](#another-policys-run))"),
        ("analytic 1 : 1/3", "`traces/synth-2rank.json`, then `--compare dbs,static`",
         f"dbs {analytic['speedup_dbs_over_static']:.3f}× static over {analytic['epochs']} epochs "
         f"({analytic['balanced_epoch_speedup']:.3f}× in every epoch after the first, at an equal "
         "split)"),
        (f"{thousands(big['ranks'])} ranks × {big['epochs']} epochs",
         f"`traces/synth-1000.json` (a {big['trace_mb']} MB trace), then `--compare dbs,static "
         "--report big.html`",
         f"{big['wall_s']:.2f} s wall ({big['cpu_s']:.2f} s CPU, {big['rss_mb']:.0f} MB) including "
         f"the report; dbs {big['speedup_dbs_over_static']:.2f}× static"),
    ]
    return table(["check", "command", "figure"], rows) + provenance([big], ["replay-1000-ranks"])


def replay_accuracy_table():
    return replay_accuracy.table_lines(study("replay.jsonl", "replay-accuracy"))


# The test accuracy the local SGD page measures the time to (its command's --target).
LOCAL_SGD_TARGET = 0.78


def local_sgd():
    lines = local_sgd_report.report_lines(study("local-sgd.jsonl", "local-sgd"), LOCAL_SGD_TARGET)
    return lines[1:] if lines and not lines[0] else lines


def replay_traces():
    rows = []
    for r in study_runs("replay.jsonl", "replay-own-trace"):
        name = Path(r["trace"]).stem
        if name not in REPLAY_TRACES:
            raise TableError(f"docs/results/replay.jsonl: trace {name} has no description in "
                             "bench/tables.py REPLAY_TRACES")
        rows.append((f"`{name}`", REPLAY_TRACES[name], f"{r['recorded_total_s']:.2f} s",
                     r["replay_error"].replace("-", "−")))
    return table(["trace", "what it shows", "recorded total", "replay error"], rows)


# ---------------------------------------------------------------------------------------------
# cluster bed

def img_s(rates):
    """Stand-alone rates, one a node: 1,259 / 625 / 302."""
    return " / ".join(thousands(v) for v in rates)


def dashed(text):
    """A range recorded as "lo-hi", as the pages write it: lo–hi."""
    return text.replace("-", "–")


def repeats(text):
    """A plan list recorded with "x3" for three epochs, as the pages write it: ×3."""
    return re.sub(r" x(\d+)", r" ×\1", text)


def bed_runs():
    """The cluster bed's runs of dbs alone in the quota case at today's defaults, by run."""
    runs = [r for r in study("cluster-bed.jsonl", "cluster-bed") if "run" in r]
    if not runs:
        raise TableError("docs/results/cluster-bed.jsonl: no cluster-bed record with a run")
    return runs


def bed_policies():
    """The cluster bed's runs of all three policies in the quota case of bed_runs()."""
    return [r for r in study("cluster-bed.jsonl", "cluster-bed", case=bed_runs()[-1]["case"])
            if "static" in r["ratio_to_ideal"]]


def cluster_bed_runs():
    rows = [(r["run"], img_s(r["standalone_img_s"]), f"{r['ideal_s']:.2f} s",
             f"{dashed(r['dbs_steady_epoch_s'])} s", f"{r['ratio_to_ideal']['dbs']:.2f}×",
             " / ".join(f"{b:.2f}" for b in r["busy"]), f"{r['dbs_ratio_to_best_split']:.3f}×",
             f"{r['node1_allreduce_ms_per_step']:.1f} ms") for r in bed_runs()]
    return table(["run", "stand-alone img/s", "ideal", "`dbs` steady epoch", "/ ideal",
                  "busy per node", "/ best split", "node1 allreduce per step"], rows)


BED_POLICIES = ("static", "dbs-rate", "dbs")


def ratio_cells(ratios):
    """The ratio to the ideal of each of BED_POLICIES, "–" for a policy not run."""
    return [f"{ratios[p]:.2f}×" if p in ratios else "–" for p in BED_POLICIES]


def cluster_bed_policies():
    rows = [(img_s(r["standalone_img_s"]), f"{r['ideal_s']:.2f} s",
             *ratio_cells(r["ratio_to_ideal"]), f"{r['dbs_ratio_to_best_split']:.3f}×",
             repeats(r["dbs_plans"])) for r in bed_policies()]
    return table(["stand-alone img/s", "ideal", *BED_POLICIES, "dbs / best split",
                  "dbs plans (3–5)"], rows)


BED_WAITS = {  # the sleep case's waiting modes, as the page names them
    "auto (spins)": "`auto` (spins on full-core nodes)",
    "sleep": "`--wait sleep`",
}


def cluster_bed_sleep():
    rows = []
    for r in study("cluster-bed.jsonl", "cluster-bed"):
        if "wait" not in r:
            continue
        if r["wait"] not in BED_WAITS:
            raise TableError(f"docs/results/cluster-bed.jsonl: wait {r['wait']!r} has no name in "
                             "bench/tables.py BED_WAITS")
        rows.append((BED_WAITS[r["wait"]], img_s(r["standalone_img_s"]), f"{r['ideal_s']:.2f} s",
                     *ratio_cells(r["ratio_to_ideal"])))
    if not rows:
        raise TableError("docs/results/cluster-bed.jsonl: no cluster-bed record with a wait")
    return table(["wait", "stand-alone img/s", "ideal", *BED_POLICIES], rows)


def cluster_bed_pairs():
    rows = [(r["pair"], "overlapped" if r["exchange"] == "overlap" else r["exchange"],
             f"{r['ratio_to_ideal']['dbs']:.2f}×", f"{r['dbs_ratio_to_best_split']:.3f}×",
             f"{dashed(r['node1_allreduce_s_per_epoch'])} s")
            for r in study("cluster-bed.jsonl", "cluster-bed") if "pair" in r]
    if not rows:
        raise TableError("docs/results/cluster-bed.jsonl: no cluster-bed record with a pair")
    return table(["pair", "exchange", "/ ideal", "/ best split", "node1 allreduce per epoch"],
                 rows)


# ---------------------------------------------------------------------------------------------
# scaling

def sweep_cells(kind):
    cells = [r for r in load_sweep() if r.get("kind") == kind]
    if not cells:
        raise TableError(f"docs/results/sweep.jsonl: no {kind} cell")
    return cells


def scaling_measured():
    cells = sweep_cells("measured")
    by = {(r["ranks"], r["threads"], r["global_batch"]): r for r in cells}
    batches = sorted({r["global_batch"] for r in cells})
    shapes = sorted({(r["ranks"], r["threads"]) for r in cells})

    def cell(r):
        if r is None:
            return "–"
        text = (f"{r['epoch_s_median']:.2f} s, {thousands(r['images_per_s'])}/s, "
                f"{pct(r['test_acc'], 1)}%")
        if "predicted_over_measured" in r:
            text += f" ({r['predicted_over_measured']:.2f}×)"
        return text
    rows = [(f"{ranks} × {threads}", *[cell(by.get((ranks, threads, b))) for b in batches])
            for ranks, threads in shapes]
    return table(["ranks × threads", f"batch {thousands(batches[0])}",
                  *[thousands(b) for b in batches[1:]]], rows)


def scaling_predicted():
    cells = [r for r in sweep_cells("predicted") if r["threads"] == 1]
    by = {(r["ranks"], r["global_batch"]): r["predicted_epoch_s"] for r in cells}
    workers = sorted({r["ranks"] for r in cells})
    rows = [(f"batch {thousands(b)}",
             *[f"{by[(w, b)]:.2f}" if (w, b) in by else "–" for w in workers])
            for b in sorted({r["global_batch"] for r in cells})]
    return table(["workers", *map(str, workers)], rows)


# ---------------------------------------------------------------------------------------------
# the scheduler's soak

def scheduler_soak():
    """The soak's runs recorded with a commit (tests/soak/soak.py --save) whose code has not
    changed since; where none is, those of the latest day (said stale under the table); without
    such records every run with a variant."""
    runs = [r for r in study("scheduler-load.jsonl", "scheduler-soak") if "variant" in r]
    if not runs:
        raise TableError("docs/results/scheduler-load.jsonl: no scheduler-soak record with a "
                         "variant")
    saved = [r for r in runs if r.get("commit")]
    if saved:
        current = [r for r in saved if not stale(r, "scheduler-soak")]
        day = max(r["date"][:10] for r in saved)
        runs = current or [r for r in saved if r["date"][:10] == day]
    bounds = sorted({r["rss_bound_mib"] for r in runs})
    rows = []
    for variant in dict.fromkeys(r["variant"] for r in runs):
        rs = [r for r in runs if r["variant"] == variant]
        restored = [r["backup_restored"] for r in rs]
        rows.append((f"`{variant}`", ", ".join(str(r["good_job_plans_from_daemon"]) for r in rs),
                     ", ".join(f"{r['daemon_peak_rss_mib']:.0f}" for r in rs),
                     sum(r["status_failed"] for r in rs),
                     "yes" if all(restored) else ", ".join("yes" if x else "no" for x in restored),
                     ", ".join("pass" if r["ok"] else "fail" for r in rs)))
    return (table(["variant", "good job's plans from the daemon",
                   f"daemon peak RSS MiB (bound {', '.join(f'{b:g}' for b in bounds)})",
                   "`/status` failed", "backup restored", "result"],
                  rows, ["---", "---", "---:", "---:", "---", "---"])
            + (provenance(runs, ["scheduler-soak"]) if saved else []))


# ---------------------------------------------------------------------------------------------
# PyTorch

def torch_case(r):
    """A speed run's case as the page names it: quota 0.33, slowed ×3."""
    if r["case"] == "quota":
        return "quota " + r["quota"].split("=")[1]
    factor = re.search(r"factor=([\d.]+)", r["summary"]["disturb"][0]).group(1)
    return f"slowed ×{factor}"


def runs_of_plans(epochs):
    """The plans of a run's epochs, repeats counted: 128/128, 198/58 ×4."""
    return balance_set.grouped(["/".join(map(str, e["batch"])) for e in epochs], "×")


def torch_speed_pairs():
    """The speed study's (static, dbs) pairs on 2 ranks by case and run, in file order."""
    speed = study("pytorch.jsonl", "pytorch-speed")
    pairs = []
    for r in speed:
        if r["policy"] != "dbs" or r["case"] == "overhead":
            continue
        static = [s for s in speed if s["policy"] == "static" and s["case"] == r["case"]
                  and s["run"] == r["run"]]
        if not static:
            raise TableError(f"docs/results/pytorch.jsonl: no static run beside dbs run "
                             f"{r['run']} of case {r['case']!r}")
        pairs.append((static[-1], r))
    order = list(dict.fromkeys(db["case"] for _, db in pairs))
    return sorted(pairs, key=lambda p: (order.index(p[1]["case"]), p[1]["run"]))


def torch_speed():
    rows, spread = [], {}
    for st, db in torch_speed_pairs():
        ratio = st["steady_epoch_s"] / db["steady_epoch_s"]
        ideal = db["steady_epoch_s"] / db["steady_busy_ideal_s"]
        spread.setdefault("quota" if db["case"] == "quota" else torch_case(db), []).append(
            (ratio, ideal))
        rows.append((torch_case(db), db["run"], f"{st['steady_epoch_s']:.2f}",
                     f"{db['steady_epoch_s']:.2f}", f"{ratio:.3f}×", f"{ideal:.3f}×",
                     f"{db['steady_slowest_work_s'] / db['steady_busy_ideal_s']:.3f}×",
                     f"{db['steady_epoch_s'] / db['steady_slowest_work_s']:.3f}×",
                     f"{st['steady_epoch_s'] / st['steady_slowest_work_s']:.3f}×",
                     db["plan_changes"], runs_of_plans(db["summary"]["epochs"])))
    x3 = lambda v: f"{v:.3f}"  # noqa: E731
    runs = {len(v) for v in spread.values()}
    text = (f"Spread over the {' or '.join(map(str, sorted(runs)))} runs: "
            + "; ".join(f"{case} {span([r for r, _ in v], x3, '×')} static, "
                        f"{span([i for _, i in v], x3, '×')} the ideal"
                        for case, v in spread.items()) + ".")
    return (table(["case", "run", "static s", "dbs s", "ratio", "dbs / ideal", "split", "rest",
                   "static's rest", "plan changes", "dbs plans (epochs 1–5)"], rows)
            + [""] + prose(text))


def dbs_cpu_per_step(r):
    """dbs.torch's own CPU time per step of a run: the larger of the ranks' over all epochs."""
    epochs = r["summary"]["epochs"]
    steps = sum(e["steps"] for e in epochs)
    return max(sum(e["dbs_overhead_s"][i] for e in epochs)
               for i in range(r["summary"]["world"])) / steps


def step_s(r):
    """A run's wall seconds per step over all its epochs."""
    epochs = r["summary"]["epochs"]
    return sum(e["wall_s"] for e in epochs) / sum(e["steps"] for e in epochs)


def torch_overhead():
    speed = study("pytorch.jsonl", "pytorch-speed", case="overhead")
    rows = []
    for world in sorted({r["world"] for r in speed}):
        st = [r for r in speed if r["world"] == world and r["policy"] == "static"]
        db = [r for r in speed if r["world"] == world and r["policy"] == "dbs"]
        if not st or not db:
            raise TableError(f"docs/results/pytorch.jsonl: no static and dbs overhead runs on "
                             f"{world} rank(s)")
        cpu, ddp = dbs_cpu_per_step(db[-1]), step_s(st[-1])
        rows.append((world, f"{1000 * ddp:.1f} ms", f"{1000 * step_s(db[-1]):.1f} ms",
                     f"{1e6 * cpu:.0f} µs", f"{100 * cpu / ddp:.2f}%"))
    pairs = torch_speed_pairs()
    cpu = [dbs_cpu_per_step(db) for _, db in pairs]
    share = [dbs_cpu_per_step(db) / step_s(st) for st, db in pairs]
    text = (f"In the speed runs above dbs's own CPU per step was "
            f"{span([1e6 * c for c in cpu], lambda v: f'{v:.0f}', ' µs')}, "
            f"{span([100 * s for s in share], lambda v: f'{v:.2f}', '%')} of the plain DDP step "
            "of the same case and run.")
    return (table(["ranks", "plain DDP step", "dbs step", "dbs's own CPU per step",
                   "share of the DDP step"], rows) + [""] + prose(text))


def torch_convergence():
    arms = ("static", "equal", "dbs")
    by = {}
    for r in study("pytorch.jsonl", "pytorch-convergence"):
        by.setdefault(r["seed"], {})[r["arm"]] = r["summary"]
    rows, diffs = [], {}
    for seed in sorted(by):
        if any(a not in by[seed] for a in arms):
            raise TableError(f"docs/results/pytorch.jsonl: seed {seed} lacks one of the arms "
                             f"{', '.join(arms)}")
        runs = by[seed]
        for i, e in enumerate(runs["dbs"]["epochs"]):
            rows.append((seed, e["epoch"],
                         *[pct(runs[a]["epochs"][i]["test_acc"]) for a in arms],
                         "/".join(map(str, e["batch"]))))
        final = {a: runs[a]["epochs"][-1]["test_acc"] * 100 for a in arms}
        for x, y in (("dbs", "static"), ("dbs", "equal"), ("equal", "static")):
            diffs.setdefault((x, y), []).append(final[x] - final[y])
    seeds = sorted(by)
    points = lambda v: f"{v:+.2f}"  # noqa: E731
    first = diffs[("dbs", "static")]
    text = ("Final differences (points): dbs − static "
            + " and ".join(f"{points(d)} (seed {s})" for d, s in zip(first, seeds))
            + f", mean {points(statistics.mean(first))}; "
            + "; ".join(f"{x} − {y} " + " and ".join(points(d) for d in diffs[(x, y)])
                        for x, y in (("dbs", "equal"), ("equal", "static"))) + ".")
    return (table(["seed", "epoch", *arms, "dbs plan"], rows)
            + [""] + prose(text.replace("-", "−")))


def torch_exchange():
    try:
        return pytorch_exchange.table_lines(study("pytorch.jsonl", "pytorch-exchange"))
    except pytorch_exchange.pc.StudyError as e:
        raise TableError(f"docs/results/pytorch.jsonl: {e}") from None


def torch_exchange_accuracy():
    return ["- " + line for line in
            pytorch_exchange.comparison_lines(study("pytorch.jsonl", "pytorch-exchange"))]


# ---------------------------------------------------------------------------------------------
# balance

DEFAULT_GAIN = 0.02  # the gain gate of dbs's default (--min-gain)
BALANCE_CASES = ("quota 1=0.33", "sleep rank=1,factor=3")  # the 2-rank study's cases


def balance_sets(case, min_gain=DEFAULT_GAIN):
    """The balance study's 2-rank runs of one case at a gain gate, by set (in file order)."""
    groups = {}
    for r in study("balance.jsonl", "balance-2rank", case=case, min_gain=min_gain):
        groups.setdefault((str(r["set"]), r["date"]), []).append(r)
    return [sorted(g, key=lambda r: r["run"]) for g in groups.values()]


def sets_of_three(case, min_gain=DEFAULT_GAIN):
    """The balance study's latest 2-rank set of three runs of one case at the gain gate."""
    full = [g for g in balance_sets(case, min_gain) if [r["run"] for r in g] == [1, 2, 3]]
    if not full:
        raise TableError(f"docs/results/balance.jsonl: no set of 3 runs of {case!r}")
    return full[-1]


def balance_case(case):
    """A 2-rank case as the page names it: quota 0.33, sleep ×3."""
    m = re.fullmatch(r"quota \d+=([\d.]+)", case)
    if m:
        return f"quota {m.group(1)}"
    m = re.fullmatch(r"sleep rank=\d+,factor=([\d.]+)", case)
    return f"sleep ×{m.group(1)}" if m else case


def balance_cells(r):
    """A balance run's plans, / bracket (drift), / best split, vs static and plan changes."""
    return [repeats(r["plans"]),
            f"{r['ratio_to_bracket']:.3f}× ({r['bracket_drift_pct']:+.1f}%)".replace("-", "−"),
            f"{r['ratio_to_best_split']:.3f}×", f"{r['speedup_vs_static']:.2f}×",
            r["steady_plan_changes"]]


def balance_row(name, r):
    return (name, r["run"], *balance_cells(r))


def balance_2rank():
    """Per case, the latest set of three runs at the default gain gate; the runs of each case
    measured after that set; the latest set of three at each other gain gate."""
    latest, later, gates = [], [], []
    for case in BALANCE_CASES:
        sets, name = balance_sets(case), balance_case(case)
        last = sets.index(sets_of_three(case))
        latest += [balance_row(name, r) for r in sets[last]]
        later += [balance_row(f"{name} ({r['date']})", r) for g in sets[last + 1:] for r in g]
        gains = {r["min_gain"] for r in study("balance.jsonl", "balance-2rank", case=case)}
        for gain in sorted(gains - {DEFAULT_GAIN}):
            gates += [balance_row(f"{name}, `--min-gain {gain:g}`", r)
                      for r in sets_of_three(case, gain)]
    return table(["case", "run", "plans (epoch 2 → 3–5)", "/ bracket (drift)", "/ best split",
                  "vs static", "plan changes"], latest + later + gates)


def balance_targets():
    """How many of the 2-rank runs at the default gain gate met the targets of
    lab/experiments/balance_set.py, and for reference the best split against the same bound."""
    runs = {case: [r for g in balance_sets(case) for r in g] for case in BALANCE_CASES}

    def met(case, key, ok):
        return balance_set.count(runs[case], key, ok, zero_is_absent=False)
    rows = []
    for case in BALANCE_CASES:
        kind = case.split()[0]
        top, speed, changes = balance_set.TARGETS[kind]
        rows.append((f"{kind}: within {top:.2f}× of the bracket",
                     met(case, "ratio_to_bracket", lambda v: v <= top)))
        if speed is not None:
            rows.append((f"{kind}: at least {speed:g}× faster than static",
                         met(case, "speedup_vs_static", lambda v: v >= speed)))
        if changes is not None:
            rows.append((f"{kind}: at most {changes} plan change{'' if changes == 1 else 's'} in "
                         "the steady epochs",
                         met(case, "steady_plan_changes", lambda v: v <= changes)))
    for case in BALANCE_CASES:
        kind, top = case.split()[0], balance_set.TARGETS[case.split()[0]][0]
        rows.append((f"for reference, {kind} within {top:.2f}× of the best split",
                     met(case, "ratio_to_best_split", lambda v: v <= top)))
    dates = sorted({r["date"] for rs in runs.values() for r in rs})
    counts = " and ".join(f"{len(runs[case])} {case.split()[0]} runs in "
                          f"{len(balance_sets(case))} sets" for case in BALANCE_CASES)
    return (prose(f"Over the runs at the default gain gate that [balance.jsonl](balance.jsonl) "
                  f"keeps, {counts} (from {dates[0]} to {dates[-1]}), against the targets the "
                  "project set (`lab/experiments/balance_set.py`):")
            + [""] + table(["target", "met"], rows))


def three_rank_case(case, ranks):
    """A 3-rank case as the page names it: quotas unlimited / 0.5 / 0.25, sleep 1 / ×2 / ×4."""
    if case.startswith("quota"):
        quota = dict(re.findall(r"(\d+)=([\d.]+)", case))
        return "quotas " + " / ".join(quota.get(str(i), "unlimited") for i in range(ranks))
    factor = dict(re.findall(r"rank=(\d+),factor=([\d.]+)", case))
    return "sleep " + " / ".join(f"×{factor[str(i)]}" if str(i) in factor else "1"
                                 for i in range(ranks))


def balance_3rank():
    runs = study("balance.jsonl", "balance-3rank")
    rows = []
    for r in runs:
        if r["policy"] != "dbs":
            continue
        others = [o for o in runs if o["case"] == r["case"] and o["run"] == r["run"]
                  and o["policy"] != "dbs"]
        cells = balance_cells(r)
        if others:
            cells[2] += " (" + ", ".join(f"`{o['policy']}` {o['ratio_to_best_split']:.3f}×"
                                         for o in others) + ")"
        rows.append((three_rank_case(r["case"], len(r["busy"])), *cells))
    return table(["case", "dbs plans (3–5)", "/ bracket (drift)", "/ best split", "vs static",
                  "plan changes"], rows)


# ---------------------------------------------------------------------------------------------
# the README's headline table

def readme_rows():
    sleep = sets_of_three("sleep rank=1,factor=3")
    quota = sets_of_three("quota 1=0.33")
    x2 = lambda v: f"{v:.2f}"  # noqa: E731
    x3 = lambda v: f"{v:.3f}"  # noqa: E731
    bed = bed_runs()
    bed_static = bed_policies()[-1]
    conv = {(r["policy"], r["disturbed"]): r["test_acc"]
            for r in study("convergence.jsonl", "convergence")}
    own = study_runs("replay.jsonl", "replay-own-trace")
    big = latest("replay.jsonl", "replay-1000-ranks")
    load = latest("scheduler-load.jsonl", "scheduler-load",
                  command="dbs-bench scheduler --agents 256 --reports 200")
    engine = latest("engine.jsonl", "engine-train", threads=1)
    shm = latest("exchange.jsonl", "exchange-shm", exchange="allreduce")
    tcp = [r for r in study("exchange.jsonl", "exchange-tcp", link="200 Mbit/s, 2 nodes")
           if r["exchange"].startswith("ring")][-1]
    sweep = [r for r in load_sweep() if r["kind"] == "measured" and r["threads"] == 1]
    one = {r["global_batch"]: r["images_per_s"] for r in sweep if r["ranks"] == 1}
    two = [r["images_per_s"] / one[r["global_batch"]] for r in sweep if r["ranks"] == 2]
    recipe = study_runs("recipe.jsonl", "recipe")
    filt = {(r["data"], r["global_batch"]): r["final_test_acc"]
            for r in study_runs("filtering.jsonl", "filtering")}
    speed = study_runs("pytorch.jsonl", "pytorch-speed")
    conv_torch = study_runs("pytorch.jsonl", "pytorch-convergence")

    def mean_final(**match):
        runs = [r for r in recipe if all(r.get(k) == v for k, v in match.items())]
        return statistics.mean(r["final_test_acc"] for r in runs)

    def speedups():
        out, ideal = [], []
        for r in speed:
            if r["policy"] != "dbs" or r["case"] == "overhead":
                continue
            static = [s for s in speed if s["policy"] == "static" and s["case"] == r["case"]
                      and s["run"] == r["run"]][0]
            out.append(static["steady_epoch_s"] / r["steady_epoch_s"])
            ideal.append(r["steady_epoch_s"] / r["steady_busy_ideal_s"])
        return out, ideal

    def torch_final(arm, seed):
        r = [c for c in conv_torch if c["arm"] == arm and c["seed"] == seed][-1]
        return r["summary"]["epochs"][-1]["test_acc"]

    torch_ratio, torch_ideal = speedups()
    seeds = sorted({c["seed"] for c in conv_torch})
    torch_diff = [(torch_final("dbs", s) - torch_final("static", s)) * 100 for s in seeds]
    shm_asleep, shm_spin = values(shm, "asleep_median_us"), values(shm, "spinning_median_us")
    as_spinning = ("as spinning"
                   if min(shm_spin) <= max(shm_asleep) and min(shm_asleep) <= max(shm_spin)
                   else f"spinning {span(shm_spin, lambda v: f'{v:.0f}')} µs")
    tcp_ms = re.match(r"[\d.]+", tcp["median_ms_eager_4MiB"]).group(0)
    return [
        ("How much faster than a static split? 2 ranks, one slowed ×3",
         f"**{span([r['speedup_vs_static'] for r in sleep], x2, '×')}** (latest 3 runs); with a "
         f"CPU quota instead {span([r['speedup_vs_static'] for r in quota], x2, '×')}",
         "balance"),
        ("How close to the best split for the speeds the ranks had?",
         f"{span([r['ratio_to_best_split'] for r in sleep], x3, '×')} (sleep), "
         f"{span([r['ratio_to_best_split'] for r in quota], x3, '×')} (quota)", "balance"),
        ("Three quota-held nodes over 1 Gbit/s links",
         f"{span([r['dbs_ratio_to_best_split'] for r in bed], x3, '×')} the best split; "
         f"{span([r['ratio_to_ideal']['dbs'] for r in bed], x2, '×')} the compute-only ideal, "
         f"which leaves out the exchange (static {bed_static['ratio_to_ideal']['static']:.2f}×)",
         "cluster-bed"),
        ("Does an unequal split change the model?",
         f"{pct(conv[('dbs', True)])}% test accuracy under dbs with a rank slowed ×3, "
         f"{pct(conv[('static', False)])}% static undisturbed", "convergence"),
        ("How exact is replay?",
         as_measured(f"within {max(abs(replay_error(r)) for r in own):.1f}% of the recorded "
                     f"totals; {thousands(big['ranks'])} ranks × {big['epochs']} epochs in "
                     f"{big['wall_s']:.2f} s", "replay-1000-ranks", big), "replay"),
        ("How much can the daemon take?",
         as_measured(f"{sig3(load['reports_per_s'])} reports/s, p99 {ms(load['p99_ms'])} ms (256 "
                     "agents, in memory)", "scheduler-load", load), "scheduler-load"),
        ("How fast is the training engine?",
         as_measured(f"{thousands(engine['images_per_s'])} img/s on 1 thread, "
                     f"{engine['peak_fraction']:.2f} of the FMA peak", "engine-train", engine),
         "engine"),
        ("Does the exchange cost a quota-held node?",
         as_measured(f"asleep {span(shm_asleep, lambda v: f'{v:.0f}')} µs a call, {as_spinning}",
                     "exchange-shm", shm) + f"; over TCP {tcp_ms} ms at 200 Mbit/s", "exchange"),
        ("Scaling with workers and batch",
         f"2 ranks {span(two, x2, '×')} one rank; beyond 2, a prediction", "scaling"),
        ("The large-batch recipe at 8,192",
         f"warmup 5 epochs {pct(mean_final(global_batch=8192, warmup_epochs=5.0))}%, no warmup "
         f"{pct(mean_final(global_batch=8192, warmup_epochs=0.0, lr_scaling='linear'))}%, "
         f"batch 128 {pct(mean_final(global_batch=128))}%", "recipe"),
        ("Does filtering noisy samples help large batches?",
         f"{'no' if filt[('filtered', 8192)] <= filt[('full', 8192)] else 'yes'}: "
         f"{pct(filt[('filtered', 8192)])}% filtered against {pct(filt[('full', 8192)])}% full at "
         "8,192", "filtering"),
        ("`dbs.torch` in a PyTorch DDP script, one of 2 ranks a third as fast",
         f"{span(torch_ratio, x2, '×')} faster than plain DDP (CPU quota or slowed ×3, 3 runs "
         "each), "
         + as_measured(f"{span(torch_ideal, x3, '×')} the ideal", "pytorch-speed",
                       *[r for r in speed if r["case"] != "overhead"]) + "; test accuracy "
         f"{abs(statistics.mean(torch_diff)):.2f} points "
         f"{'below' if statistics.mean(torch_diff) < 0 else 'above'} plain DDP on the mean of "
         f"{len(seeds)} seeds (per seed {min(torch_diff):+.2f} to {max(torch_diff):+.2f})"
         .replace("-", "−"), "pytorch"),
    ]


def load_sweep():
    return load("sweep.jsonl")


def readme_headline():
    names = {"cluster-bed": "cluster bed", "scheduler-load": "scheduler load", "pytorch": "pytorch"}
    rows = [(q, a, f"[{names.get(p, p)}](docs/results/{p}.md)") for q, a, p in readme_rows()]
    return table(["question", "answer", "page"], rows)


@functools.cache
def scale_tables():
    """The scale study's tables from its records, made once a run (the analytic step of each
    plan averages many sampled steps: seconds for the whole study)."""
    try:
        return scale.tables(study("scale.jsonl", "scale"))
    except scale.pc.StudyError as e:
        raise TableError(f"docs/results/scale.jsonl: {e}") from None


def scale_table(name):
    """One of the scale study's tables (lab/experiments/scale.py tables), by its name there."""
    def make():
        _, header, rows = scale_tables()[name]
        return scale.markdown(header, rows)
    return make


TABLES = {
    "engine-train": engine_train,
    "scheduler-load": scheduler_load,
    "scheduler-plan": scheduler_plan,
    "exchange-shm": exchange_shm,
    "filter-speed": filter_speed,
    "filtering-accuracy": filtering_accuracy,
    "filtering-difference": filtering_difference,
    "convergence": convergence,
    "exchange-tcp": exchange_tcp,
    "exchange-training": exchange_training,
    "exchange-wait": exchange_wait,
    "exchange-oversubscribed": exchange_oversubscribed,
    "recipe-epochs": recipe_epochs,
    "recipe-final": recipe_final,
    "regression-gate": regression_gate,
    "regression-gate-candidates": gate_candidates,
    "replay-checks": replay_checks,
    "replay-traces": replay_traces,
    "replay-accuracy": replay_accuracy_table,
    "local-sgd": local_sgd,
    "cluster-bed-runs": cluster_bed_runs,
    "cluster-bed-policies": cluster_bed_policies,
    "cluster-bed-sleep": cluster_bed_sleep,
    "cluster-bed-pairs": cluster_bed_pairs,
    "scaling-measured": scaling_measured,
    "scaling-predicted": scaling_predicted,
    "scheduler-soak": scheduler_soak,
    "pytorch-speed": torch_speed,
    "pytorch-overhead": torch_overhead,
    "pytorch-convergence": torch_convergence,
    "pytorch-exchange": torch_exchange,
    "pytorch-exchange-accuracy": torch_exchange_accuracy,
    "balance-2rank": balance_2rank,
    "balance-targets": balance_targets,
    "balance-3rank": balance_3rank,
    "readme-headline": readme_headline,
    **{f"scale-{name}": scale_table(name)
       for name in ("balance", "changes", "control", "collective", "daemon", "replay",
                    "emulation")},
}


# ---------------------------------------------------------------------------------------------
# pages

START = re.compile(r"^<!-- table: ([a-z0-9-]+) -->$")
END = "<!-- end table -->"
TYPED = re.compile(r"^<!-- typed table: .+ -->$")


def regenerate(path):
    """(new text, problems) of a page with its regions made again from the records."""
    lines = path.read_text().split("\n")
    out, problems, i = [], [], 0
    while i < len(lines):
        m = START.match(lines[i])
        out.append(lines[i])
        i += 1
        if not m:
            continue
        name = m.group(1)
        end = next((j for j in range(i, len(lines)) if lines[j] == END), None)
        if end is None:
            problems.append(f"{rel(path)}:{i}: '<!-- table: {name} -->' without '{END}'")
            return None, problems
        if name not in TABLES:
            problems.append(f"{rel(path)}:{i}: no table named {name!r} (bench/tables.py TABLES)")
            out += lines[i:end]
        else:
            try:
                out += TABLES[name]()
            except (TableError, records.RecordError, KeyError, IndexError, ValueError) as e:
                problems.append(f"{rel(path)}:{i}: table {name}: {type(e).__name__}: {e}")
                out += lines[i:end]
        out.append(END)
        i = end + 1
    return "\n".join(out), problems


def untracked_tables(path):
    """Tables of the page's "Current table" section outside regions, not marked as typed."""
    if path.parent != RESULTS:
        return []
    problems, section, region, previous = [], False, False, ""
    for lineno, line in enumerate(path.read_text().split("\n"), 1):
        if line.startswith("## "):
            section = line.strip() == "## Current table"
        elif START.match(line):
            region = True
        elif line == END:
            region = False
        elif (section and not region and line.startswith("|") and not previous.startswith("|")
              and not TYPED.match(previous)):
            problems.append(f"{rel(path)}:{lineno}: a table in 'Current table' that is neither "
                            "generated ('<!-- table: NAME -->') nor marked "
                            "'<!-- typed table: why -->'")
        if line.strip():
            previous = line
    return problems


def rel(path):
    return str(path.relative_to(ROOT))


def main(argv):
    p = argparse.ArgumentParser(prog="bench/tables.py", description=__doc__.split("\n\n")[0])
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="compare the pages with the records")
    mode.add_argument("--write", action="store_true", help="rewrite the generated regions")
    p.add_argument("--root", default=str(records.SOURCE),
                   help="the tree of README.md and docs/results (default: this repository)")
    args = p.parse_args(argv)
    global ROOT, RESULTS
    ROOT = Path(args.root).resolve()
    RESULTS = ROOT / "docs" / "results"
    pages = [ROOT / "README.md"] + sorted(RESULTS.glob("*.md"))
    problems, regions = [], 0
    for page in pages:
        text = page.read_text()
        regions += sum(1 for line in text.split("\n") if START.match(line))
        new, found = regenerate(page)
        problems += found + untracked_tables(page)
        if new is None or new == text:
            continue
        if args.write:
            page.write_text(new)
            print(f"wrote {rel(page)}")
        else:
            diff = difflib.unified_diff(text.split("\n"), new.split("\n"), f"{rel(page)} (page)",
                                        f"{rel(page)} (from the records)", lineterm="", n=1)
            problems.append(f"{rel(page)} differs from its records (bench/tables.py --write "
                            "makes it):\n" + "\n".join(diff))
    for line in problems:
        print("FAIL: " + line)
    print(f"tables: {regions} generated region(s) in {len(pages)} page(s), "
          f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
