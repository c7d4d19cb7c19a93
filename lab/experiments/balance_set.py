#!/usr/bin/env python3
"""The tally of a balance set (lab/experiments/balance_set.sh): one line per run of the
policy (default dbs) in each case, and how many runs met the targets.

    lab/experiments/balance_set.py DIR [--policy NAME] [--record FILE --set NAME
                                   --command TEXT]

DIR holds quota<i>.json and sleep<i>.json, dbs-lab balance's JSON. The targets, over the
steady epochs: the quota case within 1.10x of the bracketed stand-alone ideal, at least 1.8x
faster than static and at most one plan change; the sleep case within 1.05x of it. Each run's
ratio is only as good as its bracket's drift (the stand-alone ideal after the run over the one
before): the runs whose bracket moved by more than 10% are counted too. The same counts against
the concurrent bracket (every rank alone at once: what ranks on one host cost each other) and
against the best split for the speeds the ranks had in the run are given for reference. Last,
per case, the yardstick's own spread: the stand-alone ideal and each rank's stand-alone rate
over every one-at-a-time round of the case's runs (a target tighter than that spread cannot be
told from the machine's drift).
With --record, each run of the policy is also appended to FILE (the results' JSON lines,
docs/results/balance.jsonl) as a "balance-2rank" record of set NAME, with the command that made
DIR (written whole at once, after every run was read: nothing half-written).
Exits 1 where DIR holds no results or a file cannot be read, 2 on bad options.
"""
import argparse
import datetime
import json
import os
import re
import signal
import sys

DRIFT_NOTE = 0.10  # as dbs-lab balance's summary notes (kDriftNote)
TARGETS = {  # case: (/bracket at most, vs static at least, plan changes at most)
    "quota": (1.10, 1.8, 1),
    "sleep": (1.05, None, None),
}


def fail(msg):
    print("balance_set.py: " + msg, file=sys.stderr)
    sys.exit(1)


def load(path, case, policy):
    try:
        with open(path) as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        fail("%s: cannot read it: %s" % (path, e))
    try:
        quota = [q for q in d["quota"] if q not in ("", "none")]
        if case == "quota" and not quota:
            fail("%s: a quota run without --quota" % path)
        if case == "sleep" and quota:
            fail("%s: a sleep run with --quota %s" % (path, ",".join(quota)))
        runs = {r["run"]: r for r in d["runs"]}
        if policy not in runs:
            fail("%s: no run '%s' (runs: %s)" % (path, policy, ", ".join(runs)))
        r = runs[policy]
        steady = r["steady_epochs"]
        first = d["steady_from_epoch"]
        plans = ["/".join(str(b) for b in e["batch"]) for e in r["epochs"]]
        plans = [plans[first - 2] if first >= 2 else "-"] + plans[first - 1:]
        rounds = d["solo_rounds"]
        return {
            "ideals": [x["independent_ideal_s"] for x in rounds],
            "rates": [x["solo_rate"] for x in rounds],
            "epoch_s": r["steady_wall_s"] / steady if steady else 0.0,
            "plans": plans,
            "bracket": r.get("steady_ratio_to_bracket"),
            "drift": r.get("bracket_drift"),
            "concurrent": r.get("steady_ratio_to_concurrent_bracket"),
            "cdrift": r.get("concurrent_bracket_drift"),
            "best": r.get("steady_ratio_to_busy_ideal"),
            "static": r.get("speedup_vs_static"),
            "changes": r["steady_plan_changes"],
            "spec": ",".join(quota) if case == "quota" else ",".join(
                q for q in d["disturb"] if q not in ("", "none")),
            "min_gain": d["min_gain"],
        }
    except (KeyError, TypeError, IndexError, ZeroDivisionError) as e:
        fail("%s: not dbs-lab balance's JSON (%s: %s)" % (path, type(e).__name__, e))


def ratio(v):
    return "-" if v is None or v == 0 else "%.3fx" % v


def pct(v):
    return "-" if v is None else "%+.1f%%" % (100 * v)


def grouped(ps, times="x"):
    """Plans in order, a repeat counted: "196/60 x2, 200/56" (times: the sign before a count)."""
    out = []
    for p in ps:
        if out and out[-1][0] == p:
            out[-1][1] += 1
        else:
            out.append([p, 1])
    return ", ".join(p if n == 1 else "%s %s%d" % (p, times, n) for p, n in out)


def plans(ps, arrow="->", times="x"):
    """"181/75 -> 196/60 x2, 200/56": the plan before the steady epochs, then theirs."""
    return "%s %s %s" % (ps[0], arrow, grouped(ps[1:], times))


def record(r, case, run, policy, set_name, command):
    """The results' record of one run (docs/results/balance.jsonl's "balance-2rank")."""
    def rounded(v, digits):
        return None if v is None or v == 0 else round(v, digits)

    def drift(v):
        return None if v is None else round(100 * v, 1)

    numbered = set_name is not None and set_name.isdigit()
    return {"study": "balance-2rank", "set": int(set_name) if numbered else set_name,
            "date": datetime.date.today().isoformat(), "case": "%s %s" % (case, r["spec"]),
            "run": run, "policy": policy,
            "plans": plans(r["plans"], "→", "×"),
            "ratio_to_bracket": rounded(r["bracket"], 3), "bracket_drift_pct": drift(r["drift"]),
            "ratio_to_concurrent": rounded(r["concurrent"], 3),
            "concurrent_drift_pct": drift(r["cdrift"]),
            "ratio_to_best_split": rounded(r["best"], 3),
            "speedup_vs_static": rounded(r["static"], 3), "steady_plan_changes": r["changes"],
            "min_gain": r["min_gain"], "command": command}


def count(rows, key, ok, zero_is_absent=True):
    have = [r for r in rows if r.get(key) is not None and not (zero_is_absent and r[key] == 0)]
    return "%d of %d" % (sum(1 for r in have if ok(r[key])), len(have)) if have else "-"


def spread(rows):
    """The stand-alone ideal's range over the rounds of rows, with each rank's rate range."""
    ideals = [v for r in rows for v in r["ideals"] if v > 0]  # 0: a round without a rate
    if not ideals:
        return "no stand-alone rounds with a rate"
    rates = [v for r in rows for v in r["rates"]]
    ranks = ", ".join("rank %d %s-%s img/s" % (i, "{:,.0f}".format(min(v[i] for v in rates)),
                                               "{:,.0f}".format(max(v[i] for v in rates)))
                      for i in range(len(rates[0])))
    return ("the one-at-a-time stand-alone ideal ranged %.3f-%.3f s over %d rounds (max/min %s); "
            "alone, %s" % (min(ideals), max(ideals), len(ideals),
                           pct(max(ideals) / min(ideals) - 1), ranks))


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # | head: end quietly, as other tools do
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--policy", default="dbs")
    ap.add_argument("--record", metavar="FILE", help="append the runs to FILE (JSON lines)")
    ap.add_argument("--set", help="the records' set name (with --record)")
    ap.add_argument("--command", help="the command that made DIR (with --record)")
    a = ap.parse_args()
    if a.record and not (a.set and a.command):
        ap.error("--record needs --set and --command")
    if not os.path.isdir(a.dir):
        fail("%s: no such directory" % a.dir)
    found = {}
    for name in os.listdir(a.dir):
        m = re.fullmatch(r"(quota|sleep)([0-9]+)\.json", name)
        if m:
            found.setdefault(m.group(1), []).append((int(m.group(2)), name))
    if not found:
        fail("%s: no quota<i>.json or sleep<i>.json" % a.dir)
    print("balance set %s: policy %s, steady epochs; ratios of the epoch time to each ideal, "
          "drift of each bracket in brackets" % (a.dir, a.policy))
    recorded = []
    for case in ("quota", "sleep"):
        if case not in found:
            continue
        rows = [load(os.path.join(a.dir, name), case, a.policy) for _, name in sorted(found[case])]
        recorded += [record(r, case, i, a.policy, a.set, a.command)
                     for i, r in enumerate(rows, 1)]
        top, speed, changes = TARGETS[case]
        specs = sorted({r["spec"] for r in rows})
        print("\n%s case (%s), %d run(s):" % (case, "; ".join(specs), len(rows)))
        print("%3s %8s %18s %18s %11s %9s %7s  %s" % (
            "run", "epoch_s", "/bracket (drift)", "/concurrent", "/best_split", "vs_static",
            "changes", "plans (the epoch before -> steady epochs)"))
        for i, r in enumerate(rows, 1):
            print("%3d %8.3f %18s %18s %11s %9s %7d  %s" % (
                i, r["epoch_s"], "%s (%s)" % (ratio(r["bracket"]), pct(r["drift"])),
                "%s (%s)" % (ratio(r["concurrent"]), pct(r["cdrift"])), ratio(r["best"]),
                ratio(r["static"]), r["changes"], plans(r["plans"])))
        print("  target: within %.2fx of the bracketed stand-alone ideal: %s" % (
            top, count(rows, "bracket", lambda v: v <= top)))
        if speed is not None:
            print("  target: at least %.1fx faster than static: %s" % (
                speed, count(rows, "static", lambda v: v >= speed)))
        if changes is not None:
            print("  target: at most %d plan change(s) in the steady epochs: %d of %d" % (
                changes, sum(1 for r in rows if r["changes"] <= changes), len(rows)))
        print("  for reference: within %.2fx of the concurrent bracket %s, of the best split %s;"
              " brackets that drifted by more than %d%%: %s" % (
                  top, count(rows, "concurrent", lambda v: v <= top),
                  count(rows, "best", lambda v: v <= top), round(100 * DRIFT_NOTE),
                  count(rows, "drift", lambda v: abs(v) > DRIFT_NOTE, False)))
        print("  the yardstick: " + spread(rows))
    if a.record:
        try:
            with open(a.record, "a") as f:
                f.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recorded))
        except OSError as e:
            fail("--record %s: cannot append to it: %s" % (a.record, e))
        print("\n%d record(s) of set %s appended to %s" % (len(recorded), a.set, a.record))


if __name__ == "__main__":
    main()
