"""dbs.torch's step timing (dbs.torch.hook.StepTimer) on a scripted clock: a step's work runs
from the end of the previous step's allreduce (for an epoch's first step, from begin()) to the
end of its backward, so it holds the optimizer update and the batch loading and leaves out the
allreduce; compute is forward + backward alone; an allreduce bucket that completes before the
end of backward changes nothing; an excluded re-plan is not work; on a rank held to a CPU
quota, work is CPU time over the quota while the steps' wall time stays within that, so a step
that waits out a throttled period does not count its lump on top. epoch() sums an epoch's
steps for the trace's timing record, its wall and CPU time running from the first step's
window to the end of the last step."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

harness.skip_unless_ready()

from dbs.torch.hook import StepTimer  # noqa: E402


class Clock:
    """Wall and process CPU seconds that move only when told."""

    def __init__(self):
        self.wall, self.cpu = 100.0, 10.0

    def __call__(self):
        return self.wall, self.cpu

    def run(self, wall, cpu=None):  # wall s pass, with cpu s of CPU (default: all of them)
        self.wall += wall
        self.cpu += wall if cpu is None else cpu


def near(a, b):
    return abs(a - b) < 1e-9


clock = Clock()
t = StepTimer(quota_cores=0, clock=clock)
t.begin()                    # the epoch's first batch is asked for
clock.run(0.2)               # loading it
t.forward(40)
clock.run(1.0)               # forward + backward
t.backward_done()
clock.run(0.7, 0.0)          # allreduce and waiting
t.allreduced(0)
clock.run(0.3)               # optimizer update and the next batch's loading
t.forward(40)
clock.run(0.5)               # an early bucket's allreduce ends inside backward: no effect
t.allreduced(1)
clock.run(0.5)
t.backward_done()
clock.run(0.1, 0.0)
t.allreduced(1)
clock.run(0.4, 0.0)          # the later bucket: the window opens at the latest completion
t.allreduced(1)
clock.run(0.25)              # update, loading
t.exclude(2.0, 0.0)          # an in-epoch re-plan's collectives inside the window
clock.run(2.0, 0.0)
t.forward(40)
clock.run(1.0)
t.backward_done(slowdown=lambda compute: 0.001)  # sleeps 1 ms of real time, none of clock's
epoch = t.epoch()
harness.check(epoch["steps"] == 3 and near(epoch["wall_s"], 6.95)
              and near(epoch["process_cpu_s"], 3.75) and near(epoch["work_s"], 3.75)
              and near(epoch["comm_s"], 1.2) and near(epoch["compute_s"], 3.0)
              and near(epoch["sleep_s"], 0.001),
              f"the epoch's figures: wall from the first window's opening to the last step's "
              f"end (6.95 s), process CPU over it (3.75 s), work, allreduce, compute and the "
              f"slowdown's sleep summed: {epoch}")
steps = t.take()
harness.check(len(steps) == 3 and t.count == 3, f"three steps recorded: {steps}")
(n0, w0, c0, f0), (n1, w1, c1, f1), (n2, w2, c2, f2) = steps
harness.check(n0 == n1 == n2 == 40, "each step's samples")
harness.check(near(w0, 1.2) and near(f0, 1.0) and near(c0, 0.7),
              f"first step: work = loading + forward/backward (1.2 s), compute 1.0 s, allreduce "
              f"0.7 s: got work {w0}, compute {f0}, allreduce {c0}")
harness.check(near(w1, 1.3) and near(f1, 1.0) and near(c1, 0.5),
              f"second step: work = update + loading + forward/backward (1.3 s), not the "
              f"allreduce before it; its allreduce until the latest bucket (0.5 s): got work "
              f"{w1}, compute {f1}, allreduce {c1}")
harness.check(near(w2, 1.25) and near(f2, 1.0),
              f"third step: the excluded re-plan is not work (1.25 s): got work {w2}")
harness.check(t.take() == [] and t.count == 3 and t.epoch()["steps"] == 0
              and t.epoch()["sleep_s"] == 0, "take() forgets the steps, count stays")

q = StepTimer(quota_cores=0.5, clock=clock)  # held to half a core
q.begin()
clock.run(0.1, 0.1)
q.forward(10)
clock.run(0.4, 0.4)  # ran at full speed on its refilled quota: 0.5 s of CPU
q.backward_done()
(_, wq, _, fq), = q.steps
harness.check(near(wq, 1.0) and near(fq, 0.4),
              f"quota 0.5 core: work = CPU 0.5 s / 0.5 = 1.0 s, compute 0.4 s wall: got {wq}, "
              f"{fq}")
q.forward(10)  # the next step, in the same epoch
clock.run(1.5, 0.5)  # throttled: waits out the period for the rest of its quota
q.backward_done()
(_, _, _, _), (_, wq, _, _) = q.take()
harness.check(near(wq, 1.0),
              f"quota 0.5 core, a throttled step of 1.5 s wall and 0.5 s CPU after one of 0.5 s "
              f"wall: work is 1.0 s as CPU over the quota, the wall so far (2.0 s) not past it "
              f"(2.0 s): got {wq}")
q.begin()
clock.run(0.1, 0.05)
q.forward(10)
clock.run(0.9, 0.2)  # a busy machine: a quarter of a core, less than its quota
q.backward_done()
(_, wq, _, _), = q.take()
harness.check(near(wq, 1.0),
              f"quota 0.5 core, an epoch's first step that got a quarter of a core: work is its "
              f"wall 1.0 s, not CPU over the quota (0.5 s): got {wq}")
print("ok: step timing")
