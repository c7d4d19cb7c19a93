"""Same mathematics: 2 ranks with fixed:100,28 give the parameters of one process training on
the global batch of 128, after one step and after one epoch (4 steps, the last one short: 40
samples split 31/9). float64 throughout; tolerance: max abs difference 1e-10 (only the
summation order differs; a missing or wrong b_i/B weighting is off by ~1e-2)."""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

harness.skip_unless_ready()

import torch  # noqa: E402

import reference  # noqa: E402
import worker  # noqa: E402

TOL = 1e-10

with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "params.pt")
    rc, stdout, stderr = harness.ranks(os.path.join(harness.ROOT, "tests/python/worker.py"),
                                       "math", out)
    if rc != 0:
        harness.fail(f"worker.py math exit {rc}\n{stderr}")
    got = torch.load(out)

harness.check(got["sizes"] == [[100, 100, 100, 31], [28, 28, 28, 9]],
              f"rank sizes per step follow fixed:100,28 and the short last step: {got['sizes']}")
harness.check(all(r["compute_s"] > 0 and r["samples"] == s
                  for r, s in zip(got["reports"], (331, 93))),
              "each rank's report counts its samples and a positive compute time")

# One process on the global batches of the same permutation.
after, _ = reference.sgd(reference.global_steps(), lr=0.5)
want = {"step": after[0], "epoch": after[-1]}

for when in ("step", "epoch"):
    diff = reference.max_diff(got[when], want[when])
    moved = reference.max_diff(want[when], list(worker.model().parameters()))
    harness.check(moved > 1e-3, f"after one {when} the parameters moved ({moved:.3g})")
    harness.check(diff <= TOL, f"after one {when}: 2 ranks vs one process, max |diff| "
                               f"{diff:.3g} <= {TOL}")
