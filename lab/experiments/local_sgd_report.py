#!/usr/bin/env python3
"""The local SGD study's tables (docs/results/local-sgd.md) from its records, the JSONL lines that
lab/experiments/cluster_localsgd.sh appends: one per run, with every epoch's wall time and test
accuracy and the nodes' stand-alone speeds.

  local_sgd_report.py RECORDS [--target 0.80]

Per link rate: the time to the target test accuracy (training time up to the first epoch at or
above it, evaluation left out; the mean over the seeds and their range), the steady epochs (those
after the first averaging one) against the compute-only ideal N / sum v_i and against the ideal
for the speeds the ranks showed in the run (over_in_run_ideal), the accuracy after
the last epoch, and every-dbs against sync-dbs and every-static (the ratio of the mean times, and
its range over the seeds). bench/tables.py makes the page's table with report_lines().
"""
import argparse
import json
import statistics
import sys

RUNS = ["sync-static", "sync-dbs", "every-static", "every-dbs"]


def to_target(record, target):
    """Training seconds until the first epoch at or above `target` accuracy (None: never)."""
    t = 0.0
    for e in record["epochs"]:
        t += e["wall_s"]
        if e["test_acc"] >= target:
            return t
    return None


def over_in_run_ideal(epoch):
    """An epoch's wall time over the best split for the speeds its ranks showed in it: rank r
    trained the share b_r / B of the samples and worked the part busy_r of the wall time, so
    its speed was (b_r / B) N / (busy_r wall), and the ideal epoch N / sum of the speeds gives
    wall / ideal = sum_r (b_r / B) / busy_r. None where the record lacks batch or busy."""
    batch, busy = epoch.get("batch"), epoch.get("busy")
    if not batch or not busy or len(batch) != len(busy) or min(busy) <= 0:
        return None
    return sum(b / sum(batch) / u for b, u in zip(batch, busy))


def _fmt(x, f="%.1f"):
    return "–" if x is None else f % x


def _span(xs, f="%.1f"):
    """' (lo–hi)' over several values; nothing for one."""
    return "" if len(xs) < 2 else f" ({f % min(xs)}–{f % max(xs)})"


def report_lines(records, target):
    """The markdown lines of the study's tables, one section per link rate, in record order."""
    lines = []
    for rate in dict.fromkeys(r["rate"] for r in records):
        at = [r for r in records if r["rate"] == rate]
        by = {name: [r for r in at if r["run"] == name] for name in RUNS}
        first = at[0]
        ideal = first["samples"] / sum(first["alone_img_s"])
        # The epochs after the first averaging one (the synchronous runs record no averaging).
        steady_from = max(r["average_after_epochs"] for r in at) + 2
        seeds = sorted({r["seed"] for r in at})
        lines += ["", f"### {rate}", "",
                  f"stand-alone {' / '.join('%.0f' % v for v in first['alone_img_s'])} img/s, "
                  f"compute-only ideal {ideal:.2f} s an epoch, {len(seeds)} seed(s), "
                  f"target {100 * target:.0f}% test accuracy", "",
                  "| run | time to target | steady epoch | / ideal | / in-run ideal | test acc "
                  f"after {len(first['epochs'])} epochs (seeds) |",
                  "|---|---|---|---|---|---|"]
        summary = {}
        for name in RUNS:
            rs = by[name]
            if not rs:
                continue
            tt = {r["seed"]: to_target(r, target) for r in rs}
            reached = None not in tt.values()
            steady = [statistics.mean(e["wall_s"] for e in r["epochs"] if e["epoch"] >= steady_from)
                      for r in rs if any(e["epoch"] >= steady_from for e in r["epochs"])]
            in_run = [x for r in rs for x in (over_in_run_ideal(e) for e in r["epochs"]
                                              if e["epoch"] >= steady_from) if x is not None]
            acc = [100 * r["epochs"][-1]["test_acc"] for r in rs]
            mean_tt = statistics.mean(tt.values()) if reached else None
            mean_steady = statistics.mean(steady) if steady else None
            summary[name] = (mean_tt, tt if reached else None, acc)
            lines.append(
                f"| {name} | {_fmt(mean_tt)} s"
                + (_span(list(tt.values())) if reached else " (not reached by every seed)")
                + f" | {_fmt(mean_steady, '%.2f')} s{_span(steady, '%.2f')}"
                + f" | {_fmt(mean_steady / ideal if steady else None, '%.2f')}×"
                + f" | {_fmt(statistics.mean(in_run) if in_run else None, '%.2f')}×"
                + f" | {statistics.mean(acc):.2f}% ({', '.join('%.2f' % a for a in acc)}) |")
        e, s, q = (summary.get(n) for n in ("every-dbs", "sync-dbs", "every-static"))
        if e and s and e[0] and s[0]:
            def versus(other):
                per_seed = [other[1][k] / e[1][k] for k in e[1] if k in other[1]]
                return f"{other[0] / e[0]:.2f}×" + _span(per_seed, "%.2f")
            text = f"every-dbs reaches {100 * target:.0f}% {versus(s)} faster than sync-dbs"
            if q and q[0]:
                text += f" and {versus(q)} faster than every-static"
            text += (f"; its accuracy after the last epoch "
                     f"{statistics.mean(e[2]) - statistics.mean(s[2]):+.2f} points from sync-dbs "
                     "(mean of the seeds)")
            lines += ["", text]
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("records")
    ap.add_argument("--target", type=float, default=0.80)
    args = ap.parse_args()
    try:
        with open(args.records) as f:
            records = [json.loads(line) for line in f if line.strip()]
    except (OSError, json.JSONDecodeError) as e:
        sys.exit(f"local_sgd_report.py: {args.records}: {e}")
    if not records:
        sys.exit(f"local_sgd_report.py: no records in {args.records}")
    print("\n".join(report_lines(records, args.target)))


if __name__ == "__main__":
    main()
