#!/usr/bin/python3
"""The PyTorch exchange study: PyTorch's compression hooks and local SGD under dbs.torch
against plain DDP with the same exchange. examples/pytorch/train.py on 2 ranks x 1 thread,
global batch 256, Adam 0.001, one run per arm and seed (--seeds), one after the other.

    lab/experiments/pytorch_exchange.py [--build DIR] [--out FILE] [--seeds 1,2] ...
    lab/experiments/pytorch_exchange.py --report FILE     # the tables of recorded results

Arms: each exchange of --exchanges - allreduce (the plain gradient allreduce), fp16
(fp16_compress_hook), powersgd (powerSGD_hook, rank --powersgd-rank, plain allreduce for the
first 10 steps) and local (local SGD: a model average every --average-every steps after one
synchronous epoch) - under plain DDP (policy static: DistributedSampler's equal split; local
is PyTorch's PostLocalSGDOptimizer with equal weights) and under dbs.torch at the fixed split
3:1 (policy fixed:192,64 for batch 256: the split dbs gives a rank three times slower, fixed
so that what is trained does not depend on the machine's load; weights b_i / B_s, and sample
weights for the averages). Speed is not judged here (pytorch_speed.py does).

Prints per arm the final test accuracy of each seed and their mean, dbs's mean minus plain
DDP's against the seed spread (the larger range over the seeds of the two arms; the target:
within it), and the bytes each rank handed
to all_reduce per step in the epochs after the first (exact counts, train.py's
exchange_bytes), against those the exchange should hand over: 4 bytes per parameter for the
allreduce, 2 for fp16, PowerSGD's rank-r factors P (n x r) and Q (m x r) of each weight matrix
it compresses plus its other tensors uncompressed (computed from the model's shapes), and one
copy of the parameters every H steps for local SGD. Records, one JSON line per run with its
whole summary, go to --out at the end, replacing the records of the same arm and seed (other
records stay), and each run's log to --logs. Exits 1 where a run fails.
"""
import argparse
import importlib.util
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_common as pc  # noqa: E402

STUDY = "pytorch-exchange"
EXCHANGES = ("allreduce", "fp16", "powersgd", "local")
POLICIES = ("static", "dbs")
POWERSGD_START = 10  # steps of plain allreduce before PowerSGD compresses (< an epoch's steps)


def options(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter,
                                epilog="example: lab/experiments/pytorch_exchange.py --build "
                                       "build --out out/pytorch.jsonl --seeds 1")
    p.add_argument("--build", default="build", help="the meson build (with -Dpython=enabled)")
    p.add_argument("--out", default="docs/results/pytorch.jsonl", help="the records (JSON lines)")
    p.add_argument("--logs", default="out/pytorch-exchange", help="folder of the runs' logs")
    p.add_argument("--report", default="", metavar="FILE",
                   help="print the tables of FILE's records and exit (no runs)")
    p.add_argument("--seeds", default="1,2", help="comma list of seeds, one run per arm each")
    p.add_argument("--exchanges", default=",".join(EXCHANGES),
                   help="comma list of " + ", ".join(EXCHANGES))
    p.add_argument("--epochs", type=int, default=3, help="epochs per run")
    p.add_argument("--batch", type=int, default=256, help="global batch (a multiple of 4)")
    p.add_argument("--train-limit", type=int, default=6000, help="training samples")
    p.add_argument("--test-limit", type=int, default=0, help="test samples (0 = 10,000)")
    p.add_argument("--powersgd-rank", type=int, default=2, help="PowerSGD's rank r")
    p.add_argument("--average-every", type=int, default=8, help="local SGD's H")
    p.add_argument("--timeout", type=int, default=3600, help="seconds a run may take")
    o = p.parse_args(argv)
    for name in ("epochs", "batch", "train_limit", "powersgd_rank", "average_every", "timeout"):
        if getattr(o, name) < 1:
            p.error(f"--{name.replace('_', '-')} {getattr(o, name)}: expected >= 1")
    if o.epochs < 2:
        p.error(f"--epochs {o.epochs}: expected >= 2 (the bytes are counted after the first)")
    if o.batch % 4:
        p.error(f"--batch {o.batch}: expected a multiple of 4 (the split 3:1)")
    if -(-o.train_limit // o.batch) <= POWERSGD_START:
        p.error(f"--train-limit {o.train_limit}: an epoch must have more than "
                f"{POWERSGD_START} steps of --batch {o.batch} (PowerSGD's plain ones)")
    try:
        o.seeds = [int(s) for s in o.seeds.split(",") if s]
    except ValueError:
        p.error(f"--seeds '{o.seeds}': expected a comma list of numbers")
    if not o.seeds or len(set(o.seeds)) != len(o.seeds):
        p.error(f"--seeds '{','.join(map(str, o.seeds))}': expected distinct seeds")
    o.exchanges = [e for e in o.exchanges.split(",") if e]
    for e in o.exchanges:
        if e not in EXCHANGES:
            p.error(f"--exchanges: '{e}' is not one of {', '.join(EXCHANGES)}")
    return o


def arm_args(o, exchange, policy):
    args = ["--policy", "static" if policy == "static" else f"fixed:{3 * o.batch // 4},"
            f"{o.batch // 4}"]
    if exchange in ("fp16", "powersgd"):
        args += ["--comm-hook", exchange]
    if exchange == "powersgd":
        args += ["--powersgd-rank", o.powersgd_rank, "--powersgd-start", POWERSGD_START]
    if exchange == "local":
        args += ["--average-every", o.average_every, "--average-after-epochs", 1]
    return args


def study(o):
    build = os.path.abspath(o.build)
    shapes = parameter_shapes(pc.check_build(build))
    os.makedirs(o.logs, exist_ok=True)
    records = []
    for seed in o.seeds:
        common = ["--epochs", o.epochs, "--batch", o.batch, "--train-limit", o.train_limit,
                  "--test-limit", o.test_limit, "--threads", 1, "--seed", seed]
        for exchange in o.exchanges:
            for policy in POLICIES:
                extra = arm_args(o, exchange, policy)
                log = os.path.join(o.logs, f"{exchange}-{policy}-seed{seed}.log")
                print(f"pytorch_exchange: seed {seed}, {exchange} under {policy}: train.py "
                      f"{' '.join(map(str, extra))} (log {log})", file=sys.stderr, flush=True)
                summary = pc.train(build, 2, common + extra, timeout=o.timeout, log=log)
                records.append({"study": STUDY, "exchange": exchange, "policy": policy,
                                "seed": seed, "powersgd_rank": o.powersgd_rank,
                                "parameter_shapes": shapes, "summary": summary})
    new = {(r["exchange"], r["policy"], r["seed"]) for r in records}
    pc.write_jsonl(o.out, STUDY, records,
                   replace=lambda r: (r.get("exchange"), r.get("policy"), r.get("seed")) in new)
    print(f"pytorch_exchange: {len(records)} records in {o.out}", file=sys.stderr)
    return pc.read_jsonl(o.out, STUDY)


def parameter_shapes(python):
    """The seed CNN's parameter shapes (examples/pytorch/train.py's SeedCNN, imported with the
    build's `python` folder on the path)."""
    sys.path.insert(0, python)
    spec = importlib.util.spec_from_file_location("train", pc.TRAIN)
    train = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train)
    return [list(p.shape) for p in train.SeedCNN().parameters()]


def expected_bytes(record):
    """Bytes per step a rank should hand to all_reduce in the epochs after the first."""
    s, shapes = record["summary"], record["parameter_shapes"]
    values = sum(_numel(shape) for shape in shapes)
    exchange = record["exchange"]
    if exchange == "allreduce":
        return 4 * values
    if exchange == "fp16":
        return 2 * values
    if exchange == "local":  # one copy of the parameters per average
        every, steps = s["average_every"], [e["steps"] for e in s["epochs"][1:]]
        if record["policy"] == "static":  # PyTorch's: every H steps counted across epochs
            averages = -(-sum(steps) // every)
        else:  # dbs.torch's: every H steps of an epoch and at its end
            averages = sum(-(-n // every) for n in steps)
        return 4 * values * averages / sum(steps)
    r, total = record["powersgd_rank"], 0
    for shape in shapes:
        n, m = shape[0], _numel(shape) // shape[0]
        compress = len(shape) > 1 and (n + m) * r * 2 < n * m  # min_compression_rate 2
        total += (n + m) * r if compress else n * m
    return 4 * total


def _numel(shape):
    out = 1
    for d in shape:
        out *= d
    return out


def arms(records):
    """Per arm (exchange, policy), in the order of EXCHANGES and POLICIES: the test accuracy (%)
    of each seed, their mean, the bytes a rank handed to all_reduce per step in the epochs after
    the first, and the bytes it should have."""
    by = {}
    for r in records:
        if not all(k in r for k in ("exchange", "policy", "seed", "parameter_shapes",
                                    "summary")):
            raise pc.StudyError(f"a {STUDY} record without its arm and seed: {sorted(r)}")
        by.setdefault((r["exchange"], r["policy"]), {})[r["seed"]] = r
    out = []
    for exchange in EXCHANGES:
        for policy in POLICIES:
            runs = by.get((exchange, policy))
            if not runs:
                continue
            acc = {seed: 100 * r["summary"]["test_acc"] for seed, r in sorted(runs.items())}
            any_run = next(iter(runs.values()))
            steady = [e for e in any_run["summary"]["epochs"] if e["epoch"] > 1]
            sent = sum(e["exchange_bytes"][0] for e in steady) / sum(e["steps"] for e in steady)
            out.append({"exchange": exchange, "policy": policy, "acc": acc,
                        "mean": sum(acc.values()) / len(acc), "sent": sent,
                        "expected": expected_bytes(any_run),
                        "split": any_run["summary"]["epochs"][0]["batch"]})
    return out


def policy_name(arm):
    """plain DDP, or dbs.torch at its fixed split as a ratio (192/64: 3:1)."""
    if arm["policy"] == "static":
        return "plain DDP"
    split = arm["split"]
    common = math.gcd(*split)
    return "dbs.torch " + ":".join(str(b // common) for b in split)


def table_lines(records):
    """The table of the records, markdown lines: per arm the test accuracy of each seed, their
    mean, and the bytes per step against those expected."""
    lines = ["| exchange | policy | test accuracy (%) per seed | mean | bytes per step "
             "| expected |", "|---|---|---|---:|---:|---:|"]
    for a in arms(records):
        lines.append(f"| {a['exchange']} | {policy_name(a)} | "
                     f"{', '.join(f'{s}: {v:.2f}' for s, v in a['acc'].items())} | "
                     f"{a['mean']:.2f} | {a['sent']:,.0f} | {a['expected']:,.0f} |")
    return lines


def comparison_lines(records):
    """Per exchange, dbs's mean test accuracy minus plain DDP's against the seed spread."""
    means = {(a["exchange"], a["policy"]): (a["mean"], a["acc"]) for a in arms(records)}
    lines = []
    for exchange in EXCHANGES:
        if (exchange, "static") in means and (exchange, "dbs") in means:
            (ms, acc_s), (md, acc_d) = means[(exchange, "static")], means[(exchange, "dbs")]
            line = f"{exchange}: dbs - plain DDP {md - ms:+.2f} points on the mean of the seeds"
            if min(len(acc_s), len(acc_d)) < 2:
                lines.append(line + "; not judged: the seed spread needs 2 seeds or more")
                continue
            # the seed spread: the larger of the two arms' ranges over their seeds
            spread = max(max(a.values()) - min(a.values()) for a in (acc_s, acc_d))
            lines.append(line + f"; the seed spread {spread:.2f} points: "
                         + ("within it" if abs(md - ms) <= spread else "NOT within it"))
    return lines


def report(records):
    first = records[0]["summary"]
    print(f"2 ranks, {first['train_samples']:,} training and {first['test_samples']:,} test "
          f"images, global batch {first['global_batch']}, {len(first['epochs'])} epochs; "
          "dbs = dbs.torch at the fixed split 3:1")
    print(f"{'exchange':<10} {'policy':<7} {'test accuracy (%) per seed':<30} {'mean':>6}  "
          f"{'bytes/step':>10} {'expected':>10}")
    for a in arms(records):
        print(f"{a['exchange']:<10} {a['policy']:<7} "
              f"{', '.join(f'{s}: {v:.2f}' for s, v in a['acc'].items()):<30} "
              f"{a['mean']:>6.2f}  {a['sent']:>10,.0f} {a['expected']:>10,.0f}")
    for line in comparison_lines(records):
        print(line)


if __name__ == "__main__":
    sys.exit(pc.main("pytorch_exchange.py", STUDY, options, study, report, sys.argv[1:]))
