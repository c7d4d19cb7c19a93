"""examples/pytorch/train.py end to end on 2 ranks (1 thread each): --policy dbs with rank 1
three times slower (--disturb rank=1,factor=3) moves batch from rank 1 to rank 0 after the
first epoch; the summary has dbs-agent's shape. --policy static (plain DDP with
DistributedSampler) runs and keeps the equal split. --average-every 2 --average-after-epochs 1
exchanges a gradient every step of epoch 1, then one parameter average per 2 steps; --comm-hook
powersgd hands all_reduce a small fraction of the gradient's bytes once it compresses (summary
field exchange_bytes)."""

import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

harness.skip_unless_ready()

TRAIN = os.path.join(harness.ROOT, "examples/pytorch/train.py")
COMMON = ["--threads", "1", "--test-limit", "200"]

with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "dbs.json")
    rc, stdout, stderr = harness.torchrun(TRAIN, "--epochs", "2", "--policy", "dbs",
                                          "--disturb", "rank=1,factor=3", "--summary", out,
                                          "--train-limit", "640", *COMMON, timeout=500)
    if rc != 0:
        harness.fail(f"train.py --policy dbs exit {rc}\n{stderr[-4000:]}")
    dbs_run = json.load(open(out))
    out = os.path.join(tmp, "static.json")
    rc, stdout, stderr = harness.torchrun(TRAIN, "--epochs", "1", "--policy", "static",
                                          "--summary", out, "--train-limit", "256", *COMMON,
                                          timeout=300)
    if rc != 0:
        harness.fail(f"train.py --policy static exit {rc}\n{stderr[-4000:]}")
    static_run = json.load(open(out))
    runs = {}
    for name, extra in (("local", ["--average-every", "2", "--average-after-epochs", "1",
                                   "--epochs", "2", "--train-limit", "512"]),
                        ("powersgd", ["--comm-hook", "powersgd", "--powersgd-start", "2",
                                      "--epochs", "1", "--train-limit", "768"])):
        out = os.path.join(tmp, name + ".json")
        rc, stdout, stderr = harness.torchrun(TRAIN, "--summary", out, *extra, *COMMON,
                                              timeout=300)
        if rc != 0:
            harness.fail(f"train.py {' '.join(extra)} exit {rc}\n{stderr[-4000:]}")
        runs[name] = json.load(open(out))

e1, e2 = dbs_run["epochs"]
for e in (e1, e2, static_run["epochs"][0]):
    harness.check(all(k in e for k in ("epoch", "wall_s", "batch", "throughput", "busy_ideal_s",
                                       "test_acc"))
                  and len(e["batch"]) == 2 and len(e["throughput"]) == 2
                  and e["wall_s"] > 0 and e["busy_ideal_s"] > 0 and 0 <= e["test_acc"] <= 1,
                  f"summary epoch {e['epoch']} has dbs-agent's fields: {e}")
harness.check(e1["batch"] == [64, 64], f"epoch 1 runs the equal split: {e1['batch']}")
harness.check(e1["throughput"][1] < e1["throughput"][0],
              f"rank 1 (factor 3) shows the lower throughput: {e1['throughput']}")
harness.check(e2["batch"][1] < 64 and sum(e2["batch"]) == 128,
              f"epoch 2 gives the slow rank 1 a smaller batch, global 128: {e2['batch']}")
harness.check(dbs_run["test_acc"] == e2["test_acc"] > 0.15,
              f"the final test_acc is the last epoch's and learned something: {e2['test_acc']}")
harness.check(static_run["epochs"][0]["batch"] == [64, 64],
              "--policy static keeps DistributedSampler's equal split")

GRADIENT = 4 * 690590  # bytes of the seed CNN's float32 gradient (or parameters)
local = runs["local"]
harness.check(local["average_every"] == 2 and local["average_after_epochs"] == 1
              and [e["exchange_bytes"] for e in local["epochs"]]
              == [[4 * GRADIENT] * 2, [2 * GRADIENT] * 2],
              "--average-every 2 --average-after-epochs 1, 4 steps an epoch: a gradient allreduce "
              "every step of epoch 1, a parameter average every 2 steps of epoch 2: "
              f"{[e['exchange_bytes'] for e in local['epochs']]}")
sent = runs["powersgd"]["epochs"][0]["exchange_bytes"]
# 6 steps: dbs's check of the hook (one gradient), 2 plain allreduces, 4 compressed steps
harness.check(sent[0] == sent[1] and 3 * GRADIENT < sent[0] < 3.2 * GRADIENT,
              f"--comm-hook powersgd: 4 compressed steps cost under a fifth of one plain "
              f"allreduce ({sent[0]} bytes in the epoch, {GRADIENT} a plain allreduce)")
