#!/usr/bin/python3
"""The PyTorch convergence study: does dbs.torch's unequal split change the model?
examples/pytorch/train.py on 2 ranks x 1 thread, all 60,000 training and 10,000 test images,
global batch 256, 5 epochs: plain DDP undisturbed (--policy static) against dbs with rank 1
slowed x3 (--disturb rank=1,factor=3). Target: dbs's final test accuracy within 0.5 points of
static's.

    lab/experiments/pytorch_convergence.py [--build DIR] [--out FILE] [--epochs N] ...
    lab/experiments/pytorch_convergence.py --report FILE   # the table of recorded results

The two runs go one after the other (--parallel: at once, when only the accuracies count; the
dbs run's plan then follows speeds that the other run disturbs). Prints the test accuracy of
each epoch of both runs and the final difference. Records, one JSON line per run with its whole
summary, go to --out at the end (replacing its pytorch-convergence records; other studies'
records stay). A run's log is kept in --logs. Exits 1 where a run fails.
"""
import argparse
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_common as pc  # noqa: E402

STUDY = "pytorch-convergence"
TARGET_POINTS = 0.5


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
    p.add_argument("--parallel", action="store_true", help="run static and dbs at once")
    p.add_argument("--timeout", type=int, default=7200, help="seconds a run may take")
    o = p.parse_args(argv)
    for name in ("epochs", "batch", "timeout"):
        if getattr(o, name) < 1:
            p.error(f"--{name} {getattr(o, name)}: expected >= 1")
    if o.factor < 1:
        p.error(f"--factor {o.factor}: expected >= 1")
    return o


def study(o):
    build = os.path.abspath(o.build)
    pc.check_build(build)
    os.makedirs(o.logs, exist_ok=True)
    common = ["--epochs", o.epochs, "--batch", o.batch, "--train-limit", o.train_limit,
              "--test-limit", o.test_limit, "--threads", 1, "--seed", o.seed]
    arms = [("static", ["--policy", "static"]),
            ("dbs", ["--policy", "dbs", "--disturb", f"rank=1,factor={o.factor:g}"])]
    results, errors = {}, []

    def run(name, extra):
        log = os.path.join(o.logs, f"{name}.log")
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
    records = [{"study": STUDY, "policy": name, "disturb": results[name]["disturb"],
                "parallel": o.parallel, "summary": results[name]} for name, _ in arms]
    pc.write_jsonl(o.out, STUDY, records)
    print(f"pytorch_convergence: {len(records)} records in {o.out}", file=sys.stderr)
    return records


def report(records):
    by = {r["policy"]: r["summary"] for r in records}
    if "static" not in by or "dbs" not in by:
        raise pc.StudyError(f"expected a static and a dbs record, got {sorted(by)}")
    st, db = by["static"], by["dbs"]
    print(f"test accuracy (%), 2 ranks, {st['train_samples']:,} training and "
          f"{st['test_samples']:,} test images, global batch {st['global_batch']}:")
    print(f"{'epoch':>5} {'static':>7} {'dbs x3':>7} {'diff':>6}  dbs plan")
    for a, b in zip(st["epochs"], db["epochs"]):
        print(f"{a['epoch']:>5} {100 * a['test_acc']:>7.2f} {100 * b['test_acc']:>7.2f} "
              f"{100 * (b['test_acc'] - a['test_acc']):>+6.2f}  "
              f"{'/'.join(map(str, b['batch']))}")
    diff = 100 * (db["test_acc"] - st["test_acc"])
    print(f"final: dbs {100 * db['test_acc']:.2f}% against static {100 * st['test_acc']:.2f}%, "
          f"{diff:+.2f} points: {'within' if abs(diff) <= TARGET_POINTS else 'NOT within'} "
          f"{TARGET_POINTS} points")


if __name__ == "__main__":
    sys.exit(pc.main("pytorch_convergence.py", STUDY, options, study, report, sys.argv[1:]))
