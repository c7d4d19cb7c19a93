"""The DDP communication hook of dbs.torch and the step timing it takes.

Weights: each rank's loss is the mean over its own b_i samples of the step. Before the sum
allreduce the hook multiplies the rank's gradient bucket by b_i / B_s (B_s = the step's global
sample count, smaller on the short last step), so the sum is the mean over the global batch: the
update of one process on the global batch.

Timing (dbs's definitions, as dbs-agent's, include/dbs/plan.h): a step's work time is everything
the rank does between two gradient allreduces: the previous step's optimizer update, loading its
batch, forward + backward. Its window opens when the previous step's allreduce ends (the latest
completion among its buckets), or, for an epoch's first step, when the epoch's first batch is
asked for (StepTimer.begin); it closes when the last gradient bucket is handed to the allreduce
(the end of backward). The exchange (dbs's allreduce, a user's communication hook, a model
average) and the wait for the other ranks are its comm time, not work; in-epoch re-plans inside
the window are left out (StepTimer.exclude). Compute is forward + backward alone (the first
forward with gradients on, in training mode, to the end of backward), without the exchange's
own time inside backward: the hooks of the buckets before the last run there, between layers.
An injected slowdown (experiments) sleeps after backward and counts as compute and work. On a
rank held to a CPU quota below torch's threads the work time is the time at the rate the quota
sustains (the extension's SustainedTime over the epoch's steps: process CPU time over the quota,
more where the rank got less than its quota), as in dbs-agent.
The hooks' own thread CPU time (without the slowdown and the allreduce, which plain DDP has too)
goes to Balancer.overhead_s.
"""

import threading
import time

import torch

import dbs
from dbs import _dbs


def held_to():
    """Cores of this process's CPU quota when it is below torch's threads, else 0."""
    cores = _dbs.cpu_quota()
    return cores if 0 < cores < torch.get_num_threads() - 1e-6 else 0.0


def _now():
    return time.perf_counter(), time.process_time()


class StepTimer:
    """This rank's steps: (samples, work s, allreduce s, compute s) each, in `steps`. Driven by
    a forward pre-hook (forward), the communication hook (backward_done, then allreduced from the
    allreduce's completion, on a gloo thread) and the loop's start of an epoch (begin)."""

    def __init__(self, quota_cores=None, clock=_now):
        self.held_to = held_to() if quota_cores is None else quota_cores
        self._sustained = _dbs.SustainedTime(self.held_to)  # the epoch's steps so far
        self._clock = clock    # () -> (wall s, process CPU s)
        self.steps = []        # [samples, work_s, comm_s, compute_s] per finished step
        self._lock = threading.Lock()
        self._origin = None    # (wall, cpu) where the next step's work window opened
        self._skip = (0.0, 0.0)  # (wall, cpu) s inside the open window that are not work
        self._step_skip = 0.0  # wall s inside the step in progress that are not compute
        self._start = None     # wall s at the step's first forward; None between steps
        self._ended = None     # (wall, cpu) at the end of the last step's backward
        self._samples = 0
        self.count = 0         # steps recorded since construction (take() does not reset it)
        # Since the last take(): (wall, cpu) where the first step's window opened and where the
        # last step's allreduce ended, and the injected sleep in seconds (the epoch's figures).
        self._first = self._last = None
        self._slept = 0.0

    def begin(self):
        """The first step of an epoch (or after anything that is not training) starts now."""
        with self._lock:
            self._origin, self._skip, self._ended = self._clock(), (0.0, 0.0), None

    def exclude(self, wall_s, cpu_s):
        """wall_s / cpu_s seconds inside the open window were not work (a re-plan's collectives,
        an exchange started inside backward); inside a step (between its forward and the end of
        its backward) not compute either."""
        with self._lock:
            self._skip = (self._skip[0] + wall_s, self._skip[1] + cpu_s)
            if self._start is not None:
                self._step_skip += wall_s

    def exchanged(self, wall_s, cpu_s):
        """An exchange after the last step's backward and outside its hooks (a model average)
        took wall_s / cpu_s: the last step's comm time, not the next step's work."""
        with self._lock:
            self._skip = (self._skip[0] + wall_s, self._skip[1] + cpu_s)
            if self.steps:
                self.steps[-1][2] += wall_s
            if self._last is not None:  # the epoch's span ends after the average
                self._last = self._clock()

    def in_step(self):
        return self._start is not None

    def forward(self, samples):
        """A forward; True when it starts a step (the first with gradients on since the last
        backward): samples is then the step's local batch."""
        if self._start is not None:
            return False
        self._samples = samples
        now = self._clock()
        self._start = now[0]
        with self._lock:
            if self._origin is None:  # neither begin() nor a previous allreduce: from here
                self._origin = now
        return True

    def backward_done(self, slowdown=None):
        """The end of the step's backward (the last bucket's hook): sleeps slowdown(compute s)
        when given (counted as compute and work) and records the step."""
        end = self._clock()
        slept = 0.0
        if slowdown is not None:
            pause = slowdown(end[0] - self._start - self._step_skip)
            if pause > 0:
                time.sleep(pause)
                slept, end = pause, self._clock()
        with self._lock:
            compute = end[0] - self._start - self._step_skip
            origin, skip = self._origin, self._skip
            self._origin, self._skip, self._ended = None, (0.0, 0.0), end
            if self._first is None:
                self._first = origin
            self._last, self._slept = end, self._slept + slept
            self._step_skip = 0.0
            work = self._sustained.add(end[0] - origin[0] - skip[0],
                                       end[1] - origin[1] - skip[1])
            # A held rank's compute (wall) can be past its work at the quota's rate: a step
            # that waited out a throttled period.
            self.steps.append([self._samples, work if self.held_to > 0 else max(work, compute),
                               0.0, compute])
            self.count += 1
        self._start = None

    def allreduced(self, step):
        """A bucket's allreduce of step `step` (count - 1 when its hook ran after the step's
        backward, count before) completed (on any thread): the next step's window opens at the
        latest completion of the last step's buckets, where its comm time ends. A completion
        before the end of backward changes nothing."""
        now = self._clock()
        with self._lock:
            if step != self.count - 1 or self._ended is None or not self.steps:
                return
            if self._origin is None or now[0] > self._origin[0]:
                self._origin, self._skip = now, (0.0, 0.0)
            self.steps[-1][2] = max(self.steps[-1][2], now[0] - self._ended[0])
            if now[0] > self._last[0]:
                self._last = now

    def epoch(self):
        """What the trace's timing record holds of the steps recorded since take(), summed:
        steps, wall_s and process_cpu_s (from the first step's window opening to the end of the
        last step's allreduce), work_s, comm_s, compute_s and sleep_s (the injected slowdown)."""
        with self._lock:
            steps, first, last = list(self.steps), self._first, self._last
            slept = self._slept
        span = (last[0] - first[0], last[1] - first[1]) if steps else (0.0, 0.0)
        return {"steps": len(steps), "wall_s": span[0], "process_cpu_s": span[1],
                "work_s": sum(s[1] for s in steps), "comm_s": sum(s[2] for s in steps),
                "compute_s": sum(s[3] for s in steps), "sleep_s": slept}

    def take(self):
        """The steps recorded so far, forgotten here."""
        with self._lock:
            out, self.steps = self.steps, []
            self._sustained = _dbs.SustainedTime(self.held_to)
            self._first = self._last = None
            self._slept = 0.0
        return [tuple(s) for s in out]


class StepClock:
    """The Balancer's hooks: the weight b_i / B_s of the step in progress, its exchange
    (exchange.py) and its timing."""

    def __init__(self, owner):
        self.owner = owner      # the Balancer: step sizes, exchanges, where finished steps go
        self.timer = StepTimer()
        self.weight = 1.0       # b_i / B_s of the step in progress
        self.exchange = None    # the exchange of the step in progress

    def forward_pre_hook(self, module, inputs):
        if not self.timer.in_step() and module.training and torch.is_grad_enabled():
            self.owner._before_step_forward()  # collectives of every rank, may raise
            cpu = time.thread_time()
            local, total = self.owner._step_sizes()
            self.weight = local / total
            self.exchange = self.owner._exchange()
            self.timer.forward(local)
            self.owner.overhead_s += time.thread_time() - cpu

    def comm_hook(self, group, bucket):
        cpu = time.thread_time()
        last = bucket.is_last()
        if last:
            if not self.timer.in_step():
                raise dbs.ConfigError("dbs.torch: a backward without a forward of the DDP "
                                      "model given to Balancer")
            slowdown = self.owner.slowdown
            if slowdown is not None:  # the experiment's, not dbs's: outside overhead_s
                self.owner.overhead_s += time.thread_time() - cpu
            self.timer.backward_done(slowdown)
            if slowdown is not None:
                cpu = time.thread_time()
            self.owner._step_done()
        step = self.timer.count - 1 if last else self.timer.count
        exchange = self.exchange
        if exchange.scale is not None:
            bucket.buffer().mul_(self.weight * exchange.scale)
        self.owner.overhead_s += time.thread_time() - cpu
        start = _now()
        fut = exchange.launch(group, bucket, step)
        if not last:  # inside backward: the exchange's own time is neither compute nor work
            end = _now()
            self.timer.exclude(end[0] - start[0], end[1] - start[1])
        return fut.then(lambda f: self._done(f, step))

    def _done(self, fut, step):
        self.timer.allreduced(step)
        v = fut.value()
        return v[0] if isinstance(v, (list, tuple)) else v
