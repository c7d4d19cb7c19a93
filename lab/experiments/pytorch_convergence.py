#!/usr/bin/python3
"""The PyTorch convergence study: does dbs.torch's unequal split change the model?
examples/pytorch/train.py on 2 ranks x 1 thread, all 60,000 training and 10,000 test images,
global batch 256, 5 epochs, one seed: plain DDP undisturbed (arm static: --policy static)
against dbs with rank 1 slowed x3 (arm dbs: --disturb rank=1,factor=3). Target: dbs's final
test accuracy within 0.5 points of static's. Arm equal is dbs.torch's sampler at a fixed equal
split, undisturbed (--policy fixed:B/2,B/2): it trains the same global batch in every step as
arm dbs (the samples of a step do not depend on the split), so equal against dbs isolates the
split, and static against equal the sample order (DistributedSampler's against dbs's).

    lab/experiments/pytorch_convergence.py [--build DIR] [--out FILE] [--seed N] [--arms ...]
    lab/experiments/pytorch_convergence.py --report FILE   # the tables of recorded results

The runs go one after the other (--parallel: at once, when only the accuracies count; the dbs
run's plan then follows speeds that the other runs disturb). Prints the test accuracy of each
epoch of each arm and the final differences. Records, one JSON line per run with its whole
summary, its seed and its arm, go to --out at the end, replacing the records of the same seed
and arm (other records stay). A run's log is kept in --logs. Exits 1 where a run fails.
"""
import argparse
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_common as pc  # noqa: E402

STUDY = "pytorch-convergence"
TARGET_POINTS = 0.5
ARMS = ("static", "equal", "dbs")


def options(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter,
                                epilog="example: lab/experiments/pytorch_convergence.py "
                                       "--build build --out out/pytorch.jsonl")
    p.add_argument("--build", default="build", help="the meson build (with -Dpython=enabled)")
    p.add_argument("--out", default="docs/results/pytorch.jsonl", help="the records (JSON lines)")
    p.add_argument("--logs", default="out/pytorch-convergence", help="folder of the runs' logs")
    p.add_argument("--report", default="", metavar="FILE",
                   help="print the table of FILE's records and exit (no runs)")
    p.add_argument("--epochs", type=int, default=5, help="epochs per run")
    p.add_argument("--batch", type=int, default=256, help="global batch")
    p.add_argument("--train-limit", type=int, default=0, help="training samples (0 = 60,000)")
    p.add_argument("--test-limit", type=int, default=0, help="test samples (0 = 10,000)")
    p.add_argument("--factor", type=float, default=3.0, help="rank 1's slowdown in the dbs run")
    p.add_argument("--seed", type=int, default=1, help="seed of the model and the permutations")
    p.add_argument("--arms", default=",".join(ARMS), help="comma list of " + ", ".join(ARMS))
    p.add_argument("--parallel", action="store_true", help="run the arms at once")
    p.add_argument("--timeout", type=int, default=7200, help="seconds a run may take")
    o = p.parse_args(argv)
    for name in ("epochs", "batch", "timeout"):
        if getattr(o, name) < 1:
            p.error(f"--{name} {getattr(o, name)}: expected >= 1")
    if o.factor < 1:
        p.error(f"--factor {o.factor}: expected >= 1")
    o.arms = o.arms.split(",")
    for a in o.arms:
        if a not in ARMS:
            p.error(f"--arms: '{a}' is not one of {', '.join(ARMS)}")
    if len(set(o.arms)) != len(o.arms):
        p.error(f"--arms {','.join(o.arms)}: an arm twice")
    if "equal" in o.arms and o.batch % 2:
        p.error(f"--batch {o.batch}: arm equal splits it in two, expected an even batch")
    return o


def study(o):
    build = os.path.abspath(o.build)
    pc.check_build(build)
    os.makedirs(o.logs, exist_ok=True)
    common = ["--epochs", o.epochs, "--batch", o.batch, "--train-limit", o.train_limit,
              "--test-limit", o.test_limit, "--threads", 1, "--seed", o.seed]
    extra = {"static": ["--policy", "static"],
             "equal": ["--policy", f"fixed:{o.batch // 2},{o.batch // 2}"],
             "dbs": ["--policy", "dbs", "--disturb", f"rank=1,factor={o.factor:g}"]}
    arms = [(a, extra[a]) for a in o.arms]
    results, errors = {}, []

    def run(name, extra):
        log = os.path.join(o.logs, f"{name}-seed{o.seed}.log")
        print(f"pytorch_convergence: {name}: train.py {' '.join(map(str, extra))} (log {log})",
              file=sys.stderr, flush=True)
        try:
            results[name] = pc.train(build, 2, common + extra, timeout=o.timeout, log=log)
        except pc.StudyError as e:
            errors.append(e)

    if o.parallel:
        threads = [threading.Thread(target=run, args=arm) for arm in arms]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    else:
        for arm in arms:
            if not errors:
                run(*arm)
    if errors:
        raise errors[0]
    records = [{"study": STUDY, "arm": name, "seed": o.seed, "policy": results[name]["policy"],
                "disturb": results[name]["disturb"], "parallel": o.parallel,
                "summary": results[name]} for name, _ in arms]
    new = {(r["seed"], r["arm"]) for r in records}
    pc.write_jsonl(o.out, STUDY, records, replace=lambda r: (r.get("seed"), r.get("arm")) in new)
    print(f"pytorch_convergence: {len(records)} records in {o.out}", file=sys.stderr)
    return pc.read_jsonl(o.out, STUDY)


def report(records):
    """Per seed, the accuracy of each epoch of each arm recorded, then the final differences
    and, over the seeds with both, the mean of dbs - static against the target."""
    by = {}
    for r in records:
        if "arm" not in r or "seed" not in r:
            raise pc.StudyError(f"a {STUDY} record without its arm and seed: {sorted(r)}")
        by.setdefault(r["seed"], {})[r["arm"]] = r["summary"]
    diffs = []
    for seed in sorted(by):
        arms = [a for a in ARMS if a in by[seed]]
        first = by[seed][arms[0]]
        print(f"seed {seed}: test accuracy (%), 2 ranks, {first['train_samples']:,} training and "
              f"{first['test_samples']:,} test images, global batch {first['global_batch']}:")
        print(f"{'epoch':>5} " + " ".join(f"{a:>7}" for a in arms) +
              ("  dbs plan" if "dbs" in arms else ""))
        for i, e in enumerate(first["epochs"]):
            row = " ".join(f"{100 * by[seed][a]['epochs'][i]['test_acc']:>7.2f}" for a in arms)
            plan = "  " + "/".join(map(str, by[seed]["dbs"]["epochs"][i]["batch"])) \
                if "dbs" in arms else ""
            print(f"{e['epoch']:>5} {row}{plan}")
        final = {a: 100 * by[seed][a]["test_acc"] for a in arms}
        pairs = [(x, y) for x, y in (("dbs", "static"), ("dbs", "equal"), ("equal", "static"))
                 if x in final and y in final]
        print("final: " + ", ".join(f"{a} {final[a]:.2f}%" for a in arms) +
              "".join(f"; {x} - {y} {final[x] - final[y]:+.2f} points" for x, y in pairs))
        if "dbs" in final and "static" in final:
            diffs.append(final["dbs"] - final["static"])
    if diffs:
        mean = sum(diffs) / len(diffs)
        print(f"dbs - static over {len(diffs)} seed(s): mean {mean:+.2f} points "
              f"(from {min(diffs):+.2f} to {max(diffs):+.2f}): "
              f"{'within' if abs(mean) <= TARGET_POINTS else 'NOT within'} {TARGET_POINTS} points")


if __name__ == "__main__":
    sys.exit(pc.main("pytorch_convergence.py", STUDY, options, study, report, sys.argv[1:]))
