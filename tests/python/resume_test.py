"""Resume through state_dict: a 2-rank run stopped after step 2 of epoch 2 and resumed from
its Balancer.state_dict trains the same samples in every global step as an uninterrupted run
(policy dbs, whose plans follow measured times, so per-rank slices may differ; the union of a
step's slices may not)."""

import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

harness.skip_unless_ready()

WORKER = os.path.join(harness.ROOT, "tests/python/worker.py")


def steps_of(log):
    """{(epoch, step): sorted indices of all ranks}."""
    out = {}
    for rank_steps in json.load(open(log)):
        for epoch, step, idx in rank_steps:
            out.setdefault((epoch, step), []).extend(idx)
    return {k: sorted(v) for k, v in out.items()}


with tempfile.TemporaryDirectory() as tmp:
    full, first, second, state = (os.path.join(tmp, n) for n in ("full", "a", "b", "state.pt"))
    for args in ((full, 3), (first, 3, 1, 2, state), (second, 3, "--resume", state)):
        rc, _, stderr = harness.ranks(WORKER, "run", *args)
        if rc != 0:
            harness.fail(f"worker.py run {args} exit {rc}\n{stderr}")
    want = steps_of(full)
    a, b = steps_of(first), steps_of(second)

harness.check(len(want) == 12 and all(len(v) == (40 if s == 3 else 128)
                                      for (_, s), v in want.items()),
              "the uninterrupted run trained 3 epochs of 4 global steps (128, 128, 128, 40)")
harness.check(max(a) == (1, 1) and min(b) == (1, 2),
              f"the stopped run ended after epoch 2 step 2, the resumed one began at step 3")
harness.check(not set(a) & set(b), "no step ran twice")
harness.check({**a, **b} == want, "every global step trained the same samples as uninterrupted")
