#!/usr/bin/python3
"""The PyTorch speed study: examples/pytorch/train.py with dbs.torch against plain DDP
(--policy static), 2 ranks x 1 thread, 6,000 samples, global batch 256, 5 epochs.

    lab/experiments/pytorch_speed.py [--build DIR] [--out FILE] [--runs N] ...
    lab/experiments/pytorch_speed.py --report FILE      # the tables of recorded results

Each of the --runs runs trains, for the quota case (rank 1 held to --quota of a core by a CPU
cgroup, see pytorch_rank.sh) and the disturb case (rank 1 slowed x3 by train.py's --disturb),
first static, then dbs. Over the steady epochs (--steady-from on) it prints per run the static
and dbs epoch seconds, their ratio, dbs over the best split for the speeds the ranks showed
(busy_ideal_s) and its two factors (split: the slowest rank's work - loading, forward +
backward, the optimizer step - over busy_ideal_s; rest: the epoch over that, i.e. the allreduce
and step-to-step jitter; static's rest beside it), and dbs's plan changes; then how many runs
met each target (at least 1.8x faster than static, within 1.10x of busy_ideal_s, at most 1 plan
change). Last, dbs.torch's own CPU time per step (the summary's dbs_overhead_s) undisturbed on
1 and 2 ranks (--overhead-worlds), against plain DDP's step (static's epoch seconds / steps); the
target is at most 2%.
Records, one JSON line per train.py run with its whole summary, the date and the commit measured,
go to --out at the end (replacing its pytorch-speed records of the cases and overhead worlds it
ran; the others, and other studies' records, stay), and to --out.part as each run ends (what a
failed study keeps).
Needs root and a writable CPU cgroup for the quota case. Exits 1 where a run fails.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_common as pc  # noqa: E402
sys.path.insert(0, os.path.join(pc.ROOT, "bench"))
import records as bench_records  # noqa: E402  (the date and commit a record carries)

TARGET_SPEEDUP, TARGET_IDEAL, TARGET_CHANGES, TARGET_OVERHEAD = 1.8, 1.10, 1, 0.02


def options(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter,
                                epilog="example: lab/experiments/pytorch_speed.py --build build "
                                       "--out out/pytorch.jsonl")
    p.add_argument("--build", default="build", help="the meson build (with -Dpython=enabled)")
    p.add_argument("--out", default="docs/results/pytorch.jsonl", help="the records (JSON lines)")
    p.add_argument("--report", default="", metavar="FILE",
                   help="print the tables of FILE's records and exit (no runs)")
    p.add_argument("--runs", type=int, default=3, help="repetitions of the study")
    p.add_argument("--cases", default="quota,disturb", help="comma list of quota, disturb")
    p.add_argument("--quota", type=float, default=0.33, help="rank 1's CPU quota, cores")
    p.add_argument("--factor", type=float, default=3.0, help="rank 1's slowdown, disturb case")
    p.add_argument("--epochs", type=int, default=5, help="epochs per run")
    p.add_argument("--steady-from", type=int, default=3, help="first steady epoch (1-based)")
    p.add_argument("--batch", type=int, default=256, help="global batch")
    p.add_argument("--train-limit", type=int, default=6000, help="training samples")
    p.add_argument("--test-limit", type=int, default=1000, help="test samples")
    p.add_argument("--overhead-worlds", default="1,2",
                   help="ranks of the undisturbed overhead runs, comma list ('' = none)")
    p.add_argument("--overhead-epochs", type=int, default=3, help="epochs of an overhead run")
    p.add_argument("--timeout", type=int, default=3600, help="seconds a run may take")
    o = p.parse_args(argv)
    cases = [c for c in o.cases.split(",") if c]
    for c in cases:
        if c not in ("quota", "disturb"):
            p.error(f"--cases: '{c}' is not quota or disturb")
    o.cases = cases
    try:
        o.overhead_worlds = [int(w) for w in o.overhead_worlds.split(",") if w]
    except ValueError:
        p.error(f"--overhead-worlds '{o.overhead_worlds}': expected a comma list of numbers")
    for name in ("runs", "epochs", "batch", "train_limit", "overhead_epochs", "timeout"):
        if getattr(o, name) < 1:
            p.error(f"--{name.replace('_', '-')} {getattr(o, name)}: expected >= 1")
    if not 1 <= o.steady_from <= o.epochs:
        p.error(f"--steady-from {o.steady_from}: expected 1..--epochs {o.epochs}")
    if not 0 < o.quota <= 1:
        p.error(f"--quota {o.quota}: expected a share of one core in (0, 1]")
    if any(w < 1 for w in o.overhead_worlds):
        p.error("--overhead-worlds: a world size below 1")
    return o


def common_args(o, epochs):
    return ["--epochs", epochs, "--batch", o.batch, "--train-limit", o.train_limit,
            "--test-limit", o.test_limit, "--threads", 1, "--seed", 1]


def study(o):
    build = os.path.abspath(o.build)
    pc.check_build(build)
    records = []
    measured = {"date": bench_records.now_utc(), "commit": bench_records.commit()}
    os.makedirs(os.path.dirname(os.path.abspath(o.out)), exist_ok=True)
    if os.path.exists(o.out + ".part"):
        os.remove(o.out + ".part")

    def run(case, rep, policy, world, extra, quota=None, epochs=o.epochs):
        print(f"pytorch_speed: {case} run {rep}, {policy}, {world} ranks", file=sys.stderr,
              flush=True)
        s = pc.train(build, world, common_args(o, epochs) + ["--policy", policy] + extra,
                     quota=quota, timeout=o.timeout)
        r = {"study": "pytorch-speed", "case": case, "run": rep, "policy": policy,
             "world": world, "quota": f"1={o.quota}" if quota else "", "summary": s,
             "steady_from": o.steady_from if case != "overhead" else 1, **measured}
        r.update(pc.steady(s, r["steady_from"]))
        records.append(r)
        with open(o.out + ".part", "a") as f:  # what a failed study keeps
            f.write(json.dumps(r, sort_keys=True) + "\n")
        print(f"pytorch_speed:   steady epoch {r['steady_epoch_s']:.2f} s, busy ideal "
              f"{r['steady_busy_ideal_s']:.2f} s, plan changes {r['plan_changes']}",
              file=sys.stderr, flush=True)

    for rep in range(1, o.runs + 1):
        for case in o.cases:
            for policy in ("static", "dbs"):
                if case == "quota":
                    run(case, rep, policy, 2, [], quota=(1, o.quota))
                else:
                    run(case, rep, policy, 2, ["--disturb", f"rank=1,factor={o.factor:g}"])
    for world in o.overhead_worlds:
        for policy in ("static", "dbs"):
            run("overhead", 1, policy, world, [], epochs=o.overhead_epochs)
    # A study of some cases or worlds replaces those records only: the others stay.
    pc.write_jsonl(o.out, "pytorch-speed", records,
                   replace=lambda r: r.get("case") in o.cases
                   or (r.get("case") == "overhead" and r.get("world") in o.overhead_worlds))
    os.remove(o.out + ".part")
    print(f"pytorch_speed: {len(records)} records in {o.out}", file=sys.stderr)
    return records


def spread(values):
    return f"{min(values):.3f}-{max(values):.3f}" if values else "-"


def report(records):
    """The tables of the records (as printed after a study)."""
    by = {(r["case"], r["run"], r["policy"], r["world"]): r for r in records}
    for case in ("quota", "disturb"):
        runs = sorted({r["run"] for r in records if r["case"] == case})
        if not runs:
            continue
        print(f"\n{case} case, 2 ranks, steady epochs from {records[0]['steady_from']}:")
        print(f"{'run':>4} {'static s':>9} {'dbs s':>7} {'ratio':>7} {'dbs/ideal':>9} "
              f"{'split':>6} {'rest':>6} {'static rest':>11} {'changes':>7}  plans")
        ratios, ideals, met = [], [], [0, 0, 0]
        for rep in runs:
            st, db = by.get((case, rep, "static", 2)), by.get((case, rep, "dbs", 2))
            if not st or not db:
                continue
            ratio = st["steady_epoch_s"] / db["steady_epoch_s"]
            ideal = db["steady_epoch_s"] / db["steady_busy_ideal_s"]
            ratios.append(ratio)
            ideals.append(ideal)
            met[0] += ratio >= TARGET_SPEEDUP
            met[1] += ideal <= TARGET_IDEAL
            met[2] += db["plan_changes"] <= TARGET_CHANGES
            plans = " -> ".join("/".join(map(str, e["batch"])) for e in db["summary"]["epochs"])
            slow = pc.steady(db["summary"], db["steady_from"])["steady_slowest_work_s"]
            st_slow = pc.steady(st["summary"], st["steady_from"])["steady_slowest_work_s"]
            print(f"{rep:>4} {st['steady_epoch_s']:>9.2f} {db['steady_epoch_s']:>7.2f} "
                  f"{ratio:>6.3f}x {ideal:>8.3f}x {slow / db['steady_busy_ideal_s']:>5.3f}x "
                  f"{db['steady_epoch_s'] / slow:>5.3f}x {st['steady_epoch_s'] / st_slow:>10.3f}x "
                  f"{db['plan_changes']:>7}  {plans}")
        n = len(ratios)
        print(f"spread: ratio {spread(ratios)}x, dbs/ideal {spread(ideals)}x")
        print(f"at least {TARGET_SPEEDUP}x faster than static: {met[0]} of {n}; within "
              f"{TARGET_IDEAL:.2f}x of busy_ideal_s: {met[1]} of {n}; at most {TARGET_CHANGES} "
              f"plan change in the steady epochs: {met[2]} of {n}")
    worlds = sorted({r["world"] for r in records if r["case"] == "overhead"})
    if worlds:
        print("\ndbs.torch's own CPU time per step, undisturbed (max over ranks):")
        print(f"{'ranks':>5} {'DDP step ms':>11} {'dbs step ms':>11} {'dbs us/step':>11} "
              f"{'share':>7}")
        for w in worlds:
            st, db = by.get(("overhead", 1, "static", w)), by.get(("overhead", 1, "dbs", w))
            if not st or not db:
                continue
            steps = sum(e["steps"] for e in db["summary"]["epochs"])
            cpu = max(sum(e["dbs_overhead_s"][i] for e in db["summary"]["epochs"])
                      for i in range(w)) / steps
            ddp = sum(e["wall_s"] for e in st["summary"]["epochs"]) / sum(
                e["steps"] for e in st["summary"]["epochs"])
            dstep = sum(e["wall_s"] for e in db["summary"]["epochs"]) / steps
            share = cpu / ddp
            print(f"{w:>5} {1000 * ddp:>11.1f} {1000 * dstep:>11.1f} {1e6 * cpu:>11.0f} "
                  f"{100 * share:>6.3f}%  {'met' if share <= TARGET_OVERHEAD else 'MISSED'} "
                  f"(at most {100 * TARGET_OVERHEAD:g}%)")


if __name__ == "__main__":
    sys.exit(pc.main("pytorch_speed.py", "pytorch-speed", options, study, report, sys.argv[1:]))
