"""Balancer: the plan of a DDP job and everything that follows it.

It owns the planner (the library's make_planner, its collectives over torch.distributed), the
position in the run (epoch, steps done) and this rank's step timings. Its batch sampler yields
this rank's samples under the plan in force; its DDP communication hook weights unequal local
batches into the global-batch mean (handing them to the user's own hook when given, as
exchange.py says) and times each step; with average_every it trains local SGD between weighted
model averages instead (averaging.py). At the end of an epoch (and every
`rebalance_every` steps) the ranks allgather their reports and each runs the policy on the same
reports, so all decide the same plan. With `remote=dbs.Remote(address="HOST:PORT", ...)` the
end-of-epoch plan comes from dbs-scheduler serve instead (over TLS with its tls_ca, the ranks
proving who they are with the job's key or munge), and the embedded policy plans whenever the
daemon's plan is not usable (unreachable, untrusted, late, refusing, a plan of another job);
in-epoch re-plans stay embedded. An outage is no error; a plan of another job on any rank
raises dbs.PlanError on every rank at that epoch end, once the embedded plan of the next epoch
is in force. With `trace=PATH` rank 0 writes the run's trace in dbs-agent's format (trace.py).

Errors: a bad argument, ranks that disagree, a state_dict of another run or a call out of order
raise dbs.ConfigError (also a ValueError) on every rank, naming what is at fault.
"""

import json
import time

import torch
import torch.distributed as dist

import dbs
from dbs import _dbs
from dbs.torch.averaging import Averaging, check_averaging_options
from dbs.torch.exchange import Local, UserHook, WeightedSum, check_hook_options, hook_name
from dbs.torch.hook import StepClock
from dbs.torch.sampler import BatchSampler
from dbs.torch.trace import Recorder, run_config

STATE_VERSION = 1


class Balancer:
    """Dynamic batch sizes for a DistributedDataParallel model.

    model:           the DDP module (its communication hook and a forward pre-hook are set)
    dataset_size:    N, samples of the training set (len(dataset)); >= global_batch
    global_batch:    B, kept by every plan (the sum of the ranks' local batches)
    policy:          "dbs" (by measured speed), "dbs-rate", "static" (equal) or "fixed:b0,b1,..."
    seed:            seed of the epoch permutations (the same on every rank)
    rebalance_every: also re-plan every K steps inside an epoch (0 = at epoch ends only);
                     needs DataLoader(num_workers=0), which asks for each step's indices only
                     when the previous step is done
    min_batch, max_batch, min_gain: the policy's bounds (max_batch 0 = B) and the predicted gain
                     below which dbs keeps its plan
    group:           the process group (None = the default one)
    remote:          the daemon, a dbs.Remote (its address, the job id there, the job's key or
                     munge, TLS): the end-of-epoch plans come from dbs-scheduler serve, with
                     the embedded policy as the fallback (None = the embedded policy only)
    trace:           a file for the run's trace in dbs-agent's format, written by rank 0 (the
                     other ranks' value is not used; None = no trace); its folder is made.
                     `dbs-scheduler replay` reads it, under every policy, static included

    comm_hook, comm_state: a DDP communication hook (fp16_compress_hook, powerSGD_hook, ...)
                     and its state (the process group, a PowerSGDState): dbs weights each
                     bucket and hands it to the hook, which exchanges it (exchange.py)
    average_every:   H: local SGD, the models averaged every H steps of an epoch and at its
                     end, weighted by the samples each rank trained (averaging.py; wrap the
                     optimizer in dbs.torch.LocalSGDOptimizer); None = synchronous
    average_after_epochs: with average_every, the first epochs trained synchronously
    average_optimizer: with average_every, the optimizer's state stays each rank's own
                     ("local") or is averaged with the parameters ("mean")

    slowdown (an attribute, None): experiments set it to f(compute_s) -> seconds to sleep after
    each step's backward, counted as compute and work, to emulate a slower node.

    Resume: save state_dict() with the model's and the optimizer's, and after a restart
    load_state_dict() it before the first epoch: the run is then at epoch `balancer.epoch`
    (the next one not finished), so the loop runs `for epoch in range(balancer.epoch, epochs)`.

    Bad settings raise dbs.ConfigError (a ValueError too) on every rank before training starts.
    """

    def __init__(self, model, dataset_size, global_batch, *, policy="dbs", seed=0,
                 rebalance_every=0, min_batch=1, max_batch=0, min_gain=0.02, group=None,
                 remote=None, trace=None, comm_hook=None, comm_state=None, average_every=None,
                 average_after_epochs=0, average_optimizer="local"):
        if not dist.is_initialized():
            raise dbs.ConfigError("dbs.torch.Balancer: torch.distributed is not initialised "
                                  "(call dbs.torch.init_process_group() first)")
        self.group = group
        self.rank = dist.get_rank(group)
        self.world = dist.get_world_size(group)
        self.settings = _dbs.Settings()
        self.settings.policy = str(policy)
        self.settings.global_batch = int(global_batch)
        self.settings.samples_per_epoch = int(dataset_size)
        self.settings.min_batch = int(min_batch)
        self.settings.max_batch = int(max_batch)
        self.settings.min_gain = float(min_gain)
        self.settings.rebalance_every = int(rebalance_every)
        self.seed = int(seed)
        self.dataset_size = int(dataset_size)
        self.global_batch = int(global_batch)
        self.remote = _dbs.Remote() if remote is None else remote
        if not isinstance(self.remote, _dbs.Remote):
            raise dbs.ConfigError(f"dbs.torch.Balancer: remote is a {type(remote).__name__}, "
                                  "not a dbs.Remote")
        self.exchange_settings = {
            "comm_hook": hook_name(comm_hook) if comm_hook is not None else None,
            "average_every": None if average_every is None else int(average_every),
            "average_after_epochs": int(average_after_epochs),
            "average_optimizer": str(average_optimizer)}
        self._agree()
        if self.global_batch < self.world:
            raise dbs.ConfigError(f"dbs.torch.Balancer: global_batch {self.global_batch} is smaller "
                             f"than the world size {self.world}")
        if self.dataset_size < self.global_batch:
            raise dbs.ConfigError(f"dbs.torch.Balancer: the dataset has {self.dataset_size} samples, "
                             f"fewer than global_batch {self.global_batch}")
        if self.settings.rebalance_every < 0:
            raise dbs.ConfigError("dbs.torch.Balancer: rebalance_every must be >= 0, got "
                             f"{self.settings.rebalance_every}")
        check_hook_options(comm_hook, comm_state)
        x = self.exchange_settings
        check_averaging_options(x["average_every"], x["average_after_epochs"],
                                x["average_optimizer"], self.settings.rebalance_every,
                                comm_hook)
        if x["average_every"] is not None:  # the plan, the trace and replay know the period
            self.settings.average_every = x["average_every"]
            self.settings.average_after_epochs = x["average_after_epochs"]
        self.steps_per_epoch = -(-self.dataset_size // self.global_batch)
        self._trace = Recorder(trace, group)  # checks rank 0's path; opened at the first epoch
        self._run = run_config(model, seed=self.seed) if self._trace.on else None
        self._planner = self._make_planner()
        self._closed = False
        self._started = False   # the first epoch began here (and the trace was opened)
        self.slowdown = None    # the experiments' hook (above)
        self.epoch = 0          # the epoch in progress (or last finished), 0-based
        self._done = 0          # its steps whose backward finished
        self._reported = False  # its end was reported and the next plan made
        self._window = 0        # first step since the last in-epoch re-plan
        self._given = 0         # steps of the epoch whose indices the sampler gave
        self.overhead_s = 0.0   # thread CPU s of this rank in dbs.torch's code (sampler, hooks
                                # without the slowdown, reports, planning), cumulative
        self.replans = 0        # in-epoch re-plans that changed the plan this epoch
        self.reports = []       # every rank's dbs.Report of the last finished epoch
        # where the plan in force came from: "initial", "embedded", "daemon",
        # "embedded-fallback" (the daemon's plan was not usable), "rebalance" or "resumed"
        self.source = "initial"
        self._sync = (UserHook(comm_hook, comm_state, self.world, group) if comm_hook
                      is not None else WeightedSum())  # the exchange of synchronous steps
        self._averaging = (Averaging(x["average_every"], x["average_after_epochs"],
                                     x["average_optimizer"] == "mean", self.world, group)
                           if x["average_every"] is not None else None)
        self._params = [p for p in model.parameters() if p.requires_grad]
        self._clock = StepClock(self)  # its timer's steps: this epoch's on this rank
        model.register_forward_pre_hook(self._clock.forward_pre_hook)
        model.register_comm_hook(group, self._clock.comm_hook)
        self.sampler = BatchSampler(self)

    @property
    def plan(self):
        """The plan in force (dbs.Plan): batch[i] is rank i's local batch of a full step."""
        return self._planner.plan()

    # The settings every rank must share: checked once, on all ranks, so every rank raises.
    def _agree(self):
        mine = {"settings": json.loads(self.settings.to_json()), "seed": self.seed,
                "dataset_size": self.dataset_size, "remote.address": self.remote.address,
                "remote.job": self.remote.job, "exchange": self.exchange_settings}
        every = [None] * self.world
        dist.all_gather_object(every, mine, group=self.group)
        for rank, theirs in enumerate(every):
            if theirs != every[0]:
                diff = sorted(k for k in _flat(theirs) if _flat(theirs)[k] != _flat(every[0]).get(k))
                raise dbs.ConfigError(f"dbs.torch.Balancer: ranks disagree on the settings: rank "
                                 f"{rank} has " + ", ".join(f"{k}={_flat(theirs)[k]!r}" for k in diff)
                                 + ", rank 0 " + ", ".join(f"{k}={_flat(every[0]).get(k)!r}"
                                                           for k in diff))

    def _allgather(self, data):
        """The library's allgather: every rank's `data` (bytes, the same length on all) in rank
        order, over the process group."""
        mine = torch.frombuffer(bytearray(data), dtype=torch.uint8)
        every = [torch.empty_like(mine) for _ in range(self.world)]
        dist.all_gather(every, mine, group=self.group)
        return b"".join(t.numpy().tobytes() for t in every)

    def _make_planner(self):
        """make_planner on every rank; when it fails on any rank, every rank raises, naming the
        rank and its error, so none trains alone."""
        planner, error = None, None
        try:
            planner = _dbs.make_planner(self.settings, self.rank, self.world, self._allgather,
                                        self.remote)
        except _dbs.Error as e:
            error = e
        every = [None] * self.world
        dist.all_gather_object(every, None if error is None else
                               (type(error).__name__, str(error)), group=self.group)
        if error is not None:
            raise error
        for rank, theirs in enumerate(every):
            if theirs is not None:
                kind = getattr(_dbs, theirs[0], _dbs.Error)
                raise kind(f"dbs.torch.Balancer: rank {rank} could not make its planner: "
                           f"{theirs[0]}: {theirs[1]}")
        return planner

    def _step_sizes(self):
        """(b_i, B_s) of the step about to run."""
        start = self._done * self.global_batch
        total = min(self.global_batch, self.dataset_size - start)
        if total <= 0:
            raise dbs.ConfigError(f"dbs.torch: a training step past the end of epoch "
                                  f"{self.epoch} ({self.steps_per_epoch} steps): iterate the "
                                  "DataLoader again (or call set_epoch) for the next")
        if self._given <= self._done:
            raise dbs.ConfigError(
                f"dbs.torch: a training forward of step {self._done} of epoch {self.epoch}, "
                "whose samples the Balancer's sampler did not give: the DataLoader must take "
                "them from it, DataLoader(dataset, batch_sampler=balancer.sampler), made after "
                "the Balancer (a loader with sampler=DistributedSampler or batch_size= splits "
                "the batch equally, not by the plan)")
        return _dbs.step_batch(self.plan, total)[self.rank], total

    @property
    def _steps(self):
        """(local batch, work s, allreduce s, compute s) of this epoch's steps on this rank
        (hook.py: what each of them means)."""
        return self._clock.timer.steps

    def _step_done(self):
        if self._averaging is not None and self._averaging.local(self.epoch):
            start = self._done * self.global_batch
            sizes = _dbs.step_batch(self.plan, min(self.global_batch, self.dataset_size - start))
            self._averaging.stepped(sizes, self._done + 1, self.steps_per_epoch)
        self._done += 1

    def _exchange(self):
        """The exchange of the step about to run (exchange.py)."""
        if self._averaging is not None and self._averaging.local(self.epoch):
            return _LOCAL
        return self._sync

    @property
    def comm_hook_reduces(self):
        """With comm_hook: "mean" or "sum", what the hook was found to return over the ranks
        at the first step (None before it, and without comm_hook)."""
        return getattr(self._sync, "reduces", None)

    @property
    def averages(self):
        """Model averages made by this process (0 without average_every)."""
        return 0 if self._averaging is None else self._averaging.count

    def _attach_optimizer(self, optimizer):
        """LocalSGDOptimizer's: the optimizer whose updates end with the averages."""
        if self._averaging is None:
            raise ValueError("dbs.torch.LocalSGDOptimizer: the Balancer has no average_every "
                             "(it trains synchronously: use the optimizer as it is)")
        if self._averaging.optimizer is not None:
            raise ValueError("dbs.torch.LocalSGDOptimizer: the Balancer's optimizer is "
                             "wrapped already")
        self._averaging.optimizer = optimizer

    def _after_update(self):
        """After the optimizer's update (LocalSGDOptimizer.step): the model average when one
        is due; its time is the last step's comm time (hook.py)."""
        a = self._averaging
        if a is None or not a.owed:
            return
        wall, proc = time.perf_counter(), time.process_time()
        a.average(self._params, self.rank)
        self._clock.timer.exchanged(time.perf_counter() - wall, time.process_time() - proc)

    def _before_step_forward(self):
        """At the first forward of a training step, on every rank: what must hold or be
        settled before it (the averaging's optimizer, a communication hook's check)."""
        if self._averaging is not None:
            self._averaging.require(f"epoch {self.epoch} (0-based), step {self._done + 1}")
        self._settle()

    def _settle(self):
        """The communication hook's pending check, on every rank (a collective; exchange.py):
        raises its fault. Its waiting is not the next step's work."""
        steps = self._clock.timer.count
        if not self._sync.pending(steps):
            return
        cpu, wall, proc = time.thread_time(), time.perf_counter(), time.process_time()
        try:
            self._sync.settle(steps, self._gather_objects)
        finally:
            self.overhead_s += time.thread_time() - cpu
            self._clock.timer.exclude(time.perf_counter() - wall, time.process_time() - proc)

    def _gather_objects(self, obj):
        every = [None] * self.world
        dist.all_gather_object(every, obj, group=self.group)
        return every

    def work_s(self):
        """This rank's work seconds in the epoch in progress (or the last finished one): its
        steps' time between gradient allreduces, summed (hook.py)."""
        return sum(step[1] for step in self._steps)

    def _begin_epoch(self):
        """Moves on to the next epoch once the one in progress is done (reporting it first).
        Returns the dbs.PlanError of that report, if any, for set_epoch to raise once the next
        epoch has started."""
        error = None
        if not self._started:
            self._trace.open(self.settings, self.plan, self._run, append=self.source == "resumed")
            self._started = True
        if self._done == self.steps_per_epoch:
            if not self._reported:
                try:
                    self.end_epoch()
                except dbs.PlanError as e:
                    error = e
            self.epoch += 1
            self._done = 0
            self._reported = False
            self._clock.timer.take()
            self._window = 0
            self._given = 0
            self.replans = 0
        return error

    def _before_step(self, step):
        k = self.settings.rebalance_every
        # with averaging every K steps of the epoch, at averages (K is a multiple of H)
        since = step if self._averaging is not None else step - self._window
        if k == 0 or since % k != 0:
            return
        cpu, wall, proc = time.thread_time(), time.perf_counter(), time.process_time()
        try:
            self._rebalance(step)
        finally:
            self.overhead_s += time.thread_time() - cpu
            # its collectives wait for the other ranks: not this step's work
            self._clock.timer.exclude(time.perf_counter() - wall, time.process_time() - proc)

    def _rebalance(self, step):
        if self._done != step:
            raise dbs.ConfigError("dbs.torch: rebalance_every needs DataLoader(num_workers=0): "
                               f"step {step} was asked for before step {step - 1} finished")
        window = self._gather(self._report(self._window))
        if self._planner.rebalance(window):
            self.replans += 1
            self.source = "rebalance"
            self._trace.replan(self.plan, step)
        self._window = step

    def _report(self, first):
        steps = [tuple(s) for s in self._steps[first - (self._done - len(self._steps)):]]
        return _dbs.make_report(self.rank, self.epoch, self.plan.batch[self.rank], steps)

    def _gather(self, report):
        texts = [None] * self.world
        dist.all_gather_object(texts, report.to_json(), group=self.group)
        return [_dbs.Report.from_json(t) for t in texts]

    def set_epoch(self, epoch):
        """Starts epoch `epoch` (0-based), and checks that the loop counts as the Balancer does.
        Epochs run in order, each once: the previous one must be done (all its steps). Optional:
        iterating the DataLoader again moves on to the next epoch as well. After
        load_state_dict the run is at `self.epoch`: start the loop there. Raises
        dbs.ConfigError for another epoch, saying which one the run is at. When it reports the
        previous epoch itself (end_epoch was not called), that report's dbs.PlanError is raised
        after the epoch has started: catch it and train on."""
        error = self._begin_epoch()
        self._clock.timer.begin()
        if epoch != self.epoch:
            if self._done < self.steps_per_epoch and epoch == self.epoch + 1:
                why = (f"epoch {self.epoch} has run {self._done} of its {self.steps_per_epoch} "
                       "steps: an epoch ends once the DataLoader was iterated to its end")
            else:
                why = ("epochs run in order, each once; after load_state_dict the loop starts "
                       "at balancer.epoch: for epoch in range(balancer.epoch, epochs)")
            raise dbs.ConfigError(f"dbs.torch: set_epoch({epoch}) but the run is at epoch "
                                  f"{self.epoch} (0-based; step {self._done} of "
                                  f"{self.steps_per_epoch}): {why}")
        if error is not None:
            raise error

    def end_epoch(self):
        """Reports the finished epoch and makes the next plan (once; set_epoch and the sampler
        do it when the loop did not). Returns every rank's dbs.Report of the epoch.

        Raises dbs.PlanError on every rank when a rank received the daemon's plan for another
        job: the embedded policy's plan of the next epoch is in force by then, so a caller who
        catches it can train on (later calls return the reports)."""
        if self._reported:
            return self.reports
        cpu = time.thread_time()
        try:
            return self._end_epoch()
        finally:
            self.overhead_s += time.thread_time() - cpu

    def _end_epoch(self):
        if self._done != self.steps_per_epoch:
            raise dbs.ConfigError(f"dbs.torch: end_epoch after {self._done} of "
                                  f"{self.steps_per_epoch} steps of epoch {self.epoch}: call "
                                  "it once the DataLoader was iterated to its end")
        if self._averaging is not None:
            self._averaging.require(f"end of epoch {self.epoch} (0-based)")
        self._settle()
        first = self._done - len(self._steps)
        self.reports = self._gather(self._report(first))
        planning = self.reports
        k = self.settings.rebalance_every
        if k > 0:  # the next plan follows the latest K steps
            planning = self._gather(self._report(max(first, self._done - k)))
        _, self.source = self._planner.next(planning)
        self._check_world(self.plan, "the next plan")
        self._reported = True
        self._trace.epoch(self.reports, self._clock.timer.epoch(), self.plan, self.source,
                          self.replans)
        cause, why = self._planner.fallback()  # the same cause on every rank
        if cause == "foreign":
            raise dbs.PlanError(
                f"dbs.torch: end of epoch {self.epoch} (0-based): {why}. The embedded policy "
                f"planned the next epoch and its plan is in force; the daemon at "
                f"{self.remote.address!r} is not this job's, or it is faulty (catch "
                "dbs.PlanError to train on with the embedded policy)")
        return self.reports

    def close(self, done=True):
        """This rank leaves the job: done (all epochs trained) or stopped early (it may be
        resumed). With a daemon, says goodbye to it, which then shows the job finished (or
        stopped); with a trace, closes it. Once; later calls do nothing."""
        if not self._closed:
            self._closed = True
            self._planner.finish(bool(done))
            self._trace.close()

    def _check_world(self, plan, what):
        if plan.world() != self.world:
            raise dbs.ConfigError(f"dbs.torch: {what} is for {plan.world()} ranks, WORLD_SIZE "
                                  f"is {self.world}")

    def state_dict(self):
        """What a resumed run needs to train the same samples in every global step: the
        position (between steps), the plan in force and the policy's estimator state, with the
        settings it was made under (a dict of plain values, for torch.save beside the model's
        and the optimizer's state_dict). No collective: rank 0 alone may take it. Taken after
        end_epoch(), it resumes at the next epoch; taken between steps, at the next step;
        between an epoch's last step and its end_epoch(), dbs.ConfigError (the next plan is not
        made yet)."""
        epoch, done = self.epoch, self._done
        if self._done == self.steps_per_epoch:
            if not self._reported:  # the next plan, part of the state, is not made yet
                raise dbs.ConfigError(
                    f"dbs.torch: state_dict after the last step of epoch {self.epoch} but before "
                    "its end: call balancer.end_epoch() on every rank after the epoch's loop, "
                    "then state_dict()")
            epoch, done = epoch + 1, 0
        state = {"version": STATE_VERSION, "epoch": epoch, "step": done,
                 "plan": self.plan.to_json(), "policy_state": list(self._planner.state()),
                 "settings": self.settings.to_json(), "seed": self.seed,
                 "dataset_size": self.dataset_size, "world": self.world}
        if self._averaging is not None:  # each rank's samples since the last average
            state["averaging"] = self._averaging.state()
        return state

    def load_state_dict(self, state):
        """Continues the run a state_dict() was taken from, on every rank, before its first
        epoch here: the plan in force, the policy's estimates and the position. The run is then
        at epoch `self.epoch` (and its step), so the loop starts there:
        `for epoch in range(balancer.epoch, epochs)`; the next global steps train the samples
        the saved run would have. Raises dbs.ConfigError (naming the field) for a state_dict of
        another version, world size, seed, dataset size or settings, or after training here
        began."""
        if self._started:
            raise dbs.ConfigError("dbs.torch: load_state_dict after the run here began: load "
                                  "it right after making the Balancer, before the first epoch")
        if state.get("version") != STATE_VERSION:
            raise dbs.ConfigError(f"dbs.torch: state_dict version {state.get('version')!r}, "
                                  f"this dbs reads {STATE_VERSION}")
        for key, mine in (("world", self.world), ("seed", self.seed),
                          ("dataset_size", self.dataset_size)):
            if state.get(key) != mine:
                raise dbs.ConfigError(f"dbs.torch: state_dict field '{key}' is "
                                      f"{state.get(key)!r}, this run has {mine!r}")
        if _dbs.Settings.from_json(state["settings"]) != self.settings:
            raise dbs.ConfigError(f"dbs.torch: state_dict field 'settings' is "
                                  f"{state['settings']}, this run has {self.settings.to_json()}")
        plan = _dbs.Plan.from_json(state["plan"])
        self._check_world(plan, "the state_dict's plan")
        if not 0 <= state["step"] < self.steps_per_epoch:
            raise dbs.ConfigError(f"dbs.torch: state_dict field 'step' is {state['step']}, an "
                                  f"epoch has {self.steps_per_epoch} steps")
        if self._averaging is not None:
            self._averaging.load(state.get("averaging", {}), self.world)
        self._planner.set_state(plan, [float(x) for x in state["policy_state"]])
        self.epoch, self._done = int(state["epoch"]), int(state["step"])
        self._clock.timer.take()
        self._reported, self._window, self.replans = False, self._done, 0
        self._given = self._done
        self.source = "resumed"


_LOCAL = Local()


def _flat(d, prefix=""):
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, prefix + k + "."))
        else:
            out[prefix + k] = v
    return out
