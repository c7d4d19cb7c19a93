"""Every-H model averaging under dbs (local SGD), for Balancer(average_every=H).

The first `average_after_epochs` epochs train synchronously (the weighted gradient allreduce
of every step). From then on every rank trains on its own b_i samples of each global step (the
plan's slices, as in synchronous training) with its own gradient, the mean over those samples,
and no exchange inside a step; after steps H, 2H, ... of an epoch and after its last step, the
ranks replace their parameters by their mean weighted by the samples each trained since the
last average:

    theta = sum_i n_i theta_i / sum_i n_i      (n_i: rank i's samples since the last average)

With b_i in proportion to speed every rank reaches an average at the same time. The weights
are known on every rank from the plan (the step rule gives every rank's slice of every step),
so an average is one allreduce of the weighted parameters. With H = 1 and plain SGD it is the
synchronous update: sum_i (b_i / B_s)(theta - lr g_i) = theta - lr sum_i (b_i / B_s) g_i.
PyTorch's PeriodicModelAverager gives every rank the same weight 1 / W instead.

The optimizer's state (momentum buffers, Adam's moments and step counts) stays each rank's
own, as under PyTorch's PostLocalSGDOptimizer (average_optimizer="local"); with "mean" each
floating-point state tensor shaped like its parameter is averaged with the same weights too.
Parameters are averaged, not buffers: DDP broadcasts rank 0's buffers at every forward
(broadcast_buffers=True), which for a model with buffers is a collective in every step.

Averages happen in LocalSGDOptimizer.step(), after the wrapped optimizer's update: the
Balancer cannot see the update otherwise. An average's time is the last step's comm time, not
the next step's work (hook.py).
"""

import torch
import torch.distributed as dist

import dbs


def check_averaging_options(average_every, average_after_epochs, average_optimizer,
                            rebalance_every, comm_hook):
    """dbs.ConfigError for averaging options that cannot be served (the same on every rank)."""
    if average_optimizer not in ("local", "mean"):
        raise dbs.ConfigError(f"dbs.torch.Balancer: average_optimizer {average_optimizer!r}: "
                         "expected 'local' (each rank's own) or 'mean' (averaged)")
    if average_every is None:
        if average_after_epochs:
            raise dbs.ConfigError(f"dbs.torch.Balancer: average_after_epochs={average_after_epochs} "
                             "without average_every (the epochs before local SGD starts)")
        if average_optimizer != "local":
            raise dbs.ConfigError(f"dbs.torch.Balancer: average_optimizer={average_optimizer!r} "
                             "without average_every")
        return
    if average_every < 1:
        raise dbs.ConfigError(f"dbs.torch.Balancer: average_every must be >= 1 (steps between two "
                         f"model averages), got {average_every}")
    if average_after_epochs < 0:
        raise dbs.ConfigError(f"dbs.torch.Balancer: average_after_epochs must be >= 0, got "
                         f"{average_after_epochs}")
    if rebalance_every % average_every:
        raise dbs.ConfigError(f"dbs.torch.Balancer: rebalance_every={rebalance_every} is not a "
                         f"multiple of average_every={average_every}: a re-plan between two "
                         "averages would make the ranks wait for each other there")
    if comm_hook is not None:
        raise dbs.ConfigError("dbs.torch.Balancer: comm_hook with average_every: local steps "
                         "exchange no gradient and an average exchanges parameters, which a "
                         "DDP communication hook does not see (as in PyTorch, where "
                         "post_localSGD_hook is the communication hook)")


class Averaging:
    """The averaging state of a Balancer: the schedule and each rank's samples since the last
    average (the same on every rank)."""

    def __init__(self, every, after_epochs, optimizer_state, world, group):
        self.every = every                      # H, steps of an epoch between two averages
        self.after_epochs = after_epochs        # epochs trained synchronously first
        self.optimizer_state = optimizer_state  # average the optimizer's state tensors too
        self.group = group
        self.since = [0] * world  # samples each rank trained since the last average
        self.owed = False         # the last step ended a period: average before the next
        self.optimizer = None     # the optimizer LocalSGDOptimizer wraps
        self.count = 0            # averages made by this process

    def local(self, epoch):
        """Whether epoch `epoch` (0-based) trains locally between averages."""
        return epoch >= self.after_epochs

    def stepped(self, sizes, done, steps_per_epoch):
        """A local step ended: `sizes` its every rank's samples, `done` the epoch's steps so
        far (with it)."""
        for i, n in enumerate(sizes):
            self.since[i] += n
        self.owed = done % self.every == 0 or done == steps_per_epoch

    def require(self, where):
        """dbs.ConfigError unless the optimizer is wrapped and no average is owed (the same on
        every rank)."""
        if self.optimizer is None:
            raise dbs.ConfigError(
                f"dbs.torch: {where}: Balancer(average_every={self.every}) averages the models "
                "after the optimizer's update: wrap the optimizer before the first step, opt = "
                "dbs.torch.LocalSGDOptimizer(opt, balancer), and call opt.step()")
        if self.owed:
            raise dbs.ConfigError(
                f"dbs.torch: {where}: the model average due after the last step did not "
                "happen: call step() of the dbs.torch.LocalSGDOptimizer after each backward, "
                "not the wrapped optimizer's")

    def average(self, params, rank):
        """Replaces `params` (and the optimizer's state shaped like them, with optimizer_state)
        on every rank by their mean weighted by `since`, then starts a new period."""
        total = sum(self.since)
        weight = self.since[rank] / total
        tensors = [p.detach() for p in params]
        if self.optimizer_state:
            tensors += self._state_tensors()
        for dtype in sorted({t.dtype for t in tensors}, key=str):  # one allreduce per dtype
            group = [t for t in tensors if t.dtype == dtype]
            flat = torch.cat([t.reshape(-1) for t in group]).mul_(weight)
            dist.all_reduce(flat, group=self.group)
            offset = 0
            for t in group:
                t.copy_(flat[offset:offset + t.numel()].view_as(t))
                offset += t.numel()
        self.since = [0] * len(self.since)
        self.owed = False
        self.count += 1

    def _state_tensors(self):
        """The optimizer's floating-point state tensors shaped like their parameter (not a step
        count, the same on every rank), in the order of its parameter groups and of the state's
        keys (the same on every rank)."""
        out = []
        for group in self.optimizer.param_groups:
            for p in group["params"]:
                state = self.optimizer.state.get(p, {})
                for key in sorted(state, key=str):
                    t = state[key]
                    if (key != "step" and isinstance(t, torch.Tensor)
                            and t.is_floating_point() and t.shape == p.shape):
                        out.append(t)
        return out

    def state(self):
        return {"since": list(self.since)}

    def load(self, state, world):
        since = state.get("since", [0] * world)
        if len(since) != world or any(not isinstance(n, int) or n < 0 for n in since):
            raise dbs.ConfigError(f"dbs.torch: state_dict field 'averaging.since' is {since!r}, "
                             f"expected {world} sample counts >= 0")
        self.since, self.owed = list(since), False


class LocalSGDOptimizer(torch.optim.Optimizer):
    """The optimizer of a Balancer with average_every: step() runs the wrapped optimizer's
    update, then the model average when one is due (averaging.py). Everything else is the
    wrapped optimizer's (param_groups, state, zero_grad, state_dict), so learning-rate
    schedulers take it as they take the optimizer itself (as PyTorch's PostLocalSGDOptimizer).

        opt = dbs.torch.LocalSGDOptimizer(torch.optim.SGD(ddp.parameters(), lr=0.1), balancer)
    """

    def __init__(self, optimizer, balancer):  # the wrapped optimizer's state, not its own
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise dbs.ConfigError(f"dbs.torch.LocalSGDOptimizer: {type(optimizer).__name__} is not "
                             "a torch.optim.Optimizer")
        self.optimizer = optimizer
        self.param_groups = optimizer.param_groups
        self.defaults = optimizer.defaults
        self._balancer = balancer
        balancer._attach_optimizer(optimizer)

    @property
    def state(self):
        return self.optimizer.state

    def __repr__(self):
        return f"LocalSGDOptimizer({self.optimizer!r})"

    def step(self, closure=None):
        loss = self.optimizer.step(closure)
        self._balancer._after_update()
        return loss

    def zero_grad(self, set_to_none=False):
        self.optimizer.zero_grad(set_to_none=set_to_none)

    def add_param_group(self, param_group):
        self.optimizer.add_param_group(param_group)

    def state_dict(self):
        return self.optimizer.state_dict()

    def load_state_dict(self, state_dict):
        self.optimizer.load_state_dict(state_dict)
