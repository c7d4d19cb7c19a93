"""The DDP communication hook of dbs.torch and the timing it takes.

Each rank's loss is the mean over its own b_i samples of the step. Before the sum allreduce the
hook multiplies the rank's gradient bucket by b_i / B_s (B_s = the step's global sample count,
smaller on the short last step), so the sum is the mean over the global batch: the update of
one process on the global batch. Timing: a forward pre-hook on the DDP module marks the start
of a step (the first forward with gradients on, in training mode); the hook of the last bucket
marks the end of backward. The time after it (the allreduce and the wait for other ranks, the
optimizer step) is not compute. The hooks' own thread CPU time (without the slowdown and the
allreduce, which plain DDP has too) goes to Balancer.overhead_s.
"""

import time

import torch
import torch.distributed as dist


class StepClock:
    """Per-step weight and compute time of this rank, driven by the two hooks."""

    def __init__(self, owner):
        self.owner = owner      # the Balancer: step sizes and where finished steps go
        self.start = None       # perf_counter() at the step's first forward; None between steps
        self.weight = 1.0       # b_i / B_s of the step in progress
        self.local = 0          # b_i of the step in progress

    def forward_pre_hook(self, module, inputs):
        if self.start is None and module.training and torch.is_grad_enabled():
            cpu = time.thread_time()
            self.local, total = self.owner._step_sizes()
            self.weight = self.local / total
            self.start = time.perf_counter()
            self.owner.overhead_s += time.thread_time() - cpu

    def comm_hook(self, group, bucket):
        cpu = time.thread_time()
        if bucket.is_last():
            if self.start is None:
                raise RuntimeError("dbs.torch: a backward without a forward of the DDP model "
                                   "given to Balancer")
            compute = time.perf_counter() - self.start
            slowdown = self.owner.slowdown
            if slowdown is not None:  # the experiment's, not dbs's: outside overhead_s
                self.owner.overhead_s += time.thread_time() - cpu
                pause = slowdown(compute)
                if pause > 0:
                    time.sleep(pause)
                    compute = time.perf_counter() - self.start
                cpu = time.thread_time()
            self.start = None
            self.owner._step_done(self.local, compute)
        buf = bucket.buffer()
        buf.mul_(self.weight)
        self.owner.overhead_s += time.thread_time() - cpu
        return (dist.all_reduce(buf, group=group, async_op=True).get_future()
                .then(lambda fut: fut.value()[0]))
