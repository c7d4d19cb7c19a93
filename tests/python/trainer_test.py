"""A DDP script written as PyTorch's DDP tutorial writes it (a Trainer class that wraps the
model in DDP, snapshots every epoch, resumes from its snapshot), converted by the PyTorch guide:
its trainer.py (the guide's python block), run by the guide's two torchrun lines as written
(2 epochs, then the same job asked for 4) from a folder of its own with the build's
dbs-env.sh sourced. The second run resumes from the snapshot on the first try: it says so,
trains epochs 2 and 3 only, and ends where a run of 4 epochs that was never stopped ends (the
model and the optimizer's momentum, to the float32 rounding of the per-rank split, which
follows measured speeds; a resume that lost the optimizer's or the Balancer's state, or ran an
epoch twice, is far off)."""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

harness.skip_unless_ready()

import torch  # noqa: E402

GUIDE = "docs/guides/pytorch.md"
lines = harness.guide_blocks(GUIDE, "tests/python/trainer_test.py")
harness.check(len(lines) == 1 and len(lines[0].splitlines()) == 2,
              "the guide has the two torchrun lines of trainer.py")
first, second = lines[0].splitlines()


def epochs_trained(out):
    """The epochs rank 0 says it ran ("[rank 0] Epoch E | ...")."""
    return [int(line.split("Epoch ")[1].split()[0]) for line in out.splitlines()
            if "[rank 0] Epoch " in line]


with tempfile.TemporaryDirectory(prefix="dbs-trainer-") as home:
    work = os.path.join(home, "tutorial")
    os.makedirs(work)
    script = os.path.join(work, "trainer.py")
    with open(script, "w") as f:
        f.write(harness.python_block(GUIDE, "trainer.py"))
    env = harness.user_env(home)

    rc, out, err = harness.shell(first, work, env)
    harness.check(rc == 0 and epochs_trained(out) == [0, 1]
                  and "Epoch 1 | Training snapshot saved at snapshot.pt" in out,
                  f"{first}: epochs 0 and 1, a snapshot after each: exit {rc}\n{out[-1500:]}"
                  + ("" if rc == 0 else f"\n{err[-3000:]}"))
    rc, out, err = harness.shell(second, work, env)
    harness.check(rc == 0 and "Resuming training from snapshot at Epoch 2" in out
                  and epochs_trained(out) == [2, 3],
                  f"{second}: resumes from the snapshot at epoch 2 and trains 2 and 3: exit "
                  f"{rc}\n{out[-1500:]}" + ("" if rc == 0 else f"\n{err[-3000:]}"))
    resumed = torch.load(os.path.join(work, "snapshot.pt"))

    full = os.path.join(home, "full.pt")
    rc, out, err = harness.ranks(script, 4, 1, full)
    harness.check(rc == 0 and epochs_trained(out) == [0, 1, 2, 3],
                  f"the same job never stopped trains epochs 0-3: exit {rc}\n{err[-3000:]}")
    whole = torch.load(full)

gap = max((resumed["MODEL_STATE"][k] - whole["MODEL_STATE"][k]).abs().max().item()
          for k in whole["MODEL_STATE"])
momentum = max((a["momentum_buffer"] - b["momentum_buffer"]).abs().max().item()
               for a, b in zip(resumed["OPTIMIZER_STATE"]["state"].values(),
                               whole["OPTIMIZER_STATE"]["state"].values()))
size = max(v.abs().max().item() for v in whole["MODEL_STATE"].values())
harness.check(gap < 1e-5 * max(1.0, size) and momentum < 1e-5,
              f"the resumed run ends where the run never stopped ends: largest parameter "
              f"difference {gap:.2e} (parameters up to {size:.2f}), momentum {momentum:.2e}")
harness.check(resumed["BALANCER_STATE"]["epoch"] == whole["BALANCER_STATE"]["epoch"] == 4,
              "both snapshots are at epoch 4, the next to run")
