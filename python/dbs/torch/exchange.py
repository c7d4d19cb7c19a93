"""The gradient exchange of a dbs.torch step: what the Balancer's communication hook does with a
gradient bucket once it has weighted it (hook.py's StepClock weights, times and calls these).

Words: g_i is rank i's bucket as backward left it, the mean gradient over its b_i samples of the
step; B_s = sum_i b_i, the step's global sample count; W the world size. The global-batch mean
is sum_i (b_i / B_s) g_i. Each exchange has `scale`, the factor of the weight b_i / B_s applied
to the bucket before `launch` (None: the bucket is left as it is), and `launch(group, bucket,
step)` -> a Future of the bucket's exchanged gradient (step: this process's step count, 0 for
its first step).

- WeightedSum (dbs's own): the sum allreduce of (b_i / B_s) g_i, the global-batch mean.
- UserHook: a DDP communication hook of the user's (fp16_compress_hook, powerSGD_hook with its
  PowerSGDState, their own) on buckets weighted by W b_i / B_s. DDP's contract for a hook is
  the mean over the ranks of what it is given, wherever it divides by the world size (before
  the allreduce as fp16_compress_hook, inside as PowerSGD): the mean of W (b_i / B_s) g_i is
  the global-batch mean. A hook that sums instead (no division) is found at the first step
  and then given (b_i / B_s) g_i: the sum is the same mean. Lossy hooks return an
  approximation of it, as they do of plain DDP's mean.
- Local: no exchange (local SGD between two model averages, averaging.py): the rank's own g_i.

A UserHook exchanges a step's buckets one after another (InOrder: why, and what it costs).

The first CHECKS steps of a UserHook are checked on every rank, so that a hook returning a
wrong shape raises one clear error on every rank rather than one rank's failure in DDP while
the others wait: at step 0 an exact weighted sum allreduce runs beside the hook (issued first,
in bucket order, the same on every rank), and each bucket's result is compared with it (its
shape, and the least-squares ratio of the two: about 1 for a hook that averages, W for one that
sums). A bucket at fault gets the exact sum (or zeros at later check steps) so that DDP goes on;
settle(), a collective the Balancer calls on every rank before the next step, raises the first
fault found on any rank. DDP rebuilds its buckets after the first step, hence a second check.
After the checks a wrong shape raises on the rank where it happens.
"""

import threading

import torch
import torch.distributed as dist

import dbs

CHECKS = 2  # steps whose hook results are checked on every rank


def _value(fut):
    """A Future's bucket tensor: dist's futures hold a list of one tensor, hooks' a tensor."""
    v = fut.value()
    return v[0] if isinstance(v, (list, tuple)) and len(v) == 1 else v


def _done(tensor):
    fut = torch.futures.Future()
    fut.set_result(tensor)
    return fut


def hook_name(hook):
    """A name of a communication hook that is the same on every rank (no address)."""
    inner = getattr(hook, "func", hook)  # functools.partial
    return (f"{getattr(inner, '__module__', '') or ''}."
            f"{getattr(inner, '__qualname__', type(inner).__qualname__)}").lstrip(".")


def check_hook_options(comm_hook, comm_state):
    """dbs.ConfigError for comm_hook / comm_state that cannot be used (the same on every rank)."""
    if comm_state is not None and comm_hook is None:
        raise dbs.ConfigError("dbs.torch.Balancer: comm_state without comm_hook (the state is "
                         "the hook's first argument)")
    if comm_hook is not None and not callable(comm_hook):
        raise dbs.ConfigError(f"dbs.torch.Balancer: comm_hook {comm_hook!r} is not callable: a DDP "
                         "communication hook is hook(state, bucket) -> Future")


class InOrder:
    """Runs the exchanges of a step's buckets one after another: run(bucket, launch) waits
    until the previous bucket's Future is done before launch() -> the bucket's Future. gloo
    matches collectives by the order in which each rank issues them; a hook that issues some
    from its Future's callbacks (powerSGD_hook: the allreduces of P and Q) issues them in
    different orders on different ranks when several buckets are in flight, and gloo fails
    (plain DDP too). The wait is inside backward for all buckets but the last: exchange time,
    neither compute nor work (hook.py)."""

    def __init__(self):
        self._before = None  # the Future of the step's previous bucket

    def run(self, bucket, launch):
        if bucket.index() == 0:
            self._before = None
        elif self._before is not None:
            self._before.wait()
        self._before = launch()
        return self._before


def in_order(hook):
    """A DDP communication hook that runs `hook` on a step's buckets one after another
    (InOrder), for plain DDP with a hook such as powerSGD_hook on gloo."""
    order = InOrder()
    return lambda state, bucket: order.run(bucket, lambda: hook(state, bucket))


class WeightedSum:
    """dbs's exchange: the sum allreduce of the weighted buckets."""

    scale = 1.0

    def launch(self, group, bucket, step):
        return dist.all_reduce(bucket.buffer(), group=group, async_op=True).get_future()

    def pending(self, steps):
        return False


class Local:
    """No exchange: the rank's own gradient (local SGD)."""

    scale = None

    def launch(self, group, bucket, step):
        return _done(bucket.buffer())

    def pending(self, steps):
        return False


class UserHook:
    """The user's communication hook under dbs's weighting (this module's docstring)."""

    def __init__(self, hook, state, world, group):
        self.hook, self.state = hook, state
        self.name = hook_name(hook)
        self.world, self.group = world, group
        self.scale = float(world)  # W while the hook is taken to average, 1 once it sums
        self.reduces = None        # "mean" or "sum" once the first step's check found it
        self._settled = 0          # check steps settled on every rank
        self._findings = []        # (step, bucket index, fault or None, "mean"/"sum"/None)
        self._lock = threading.Lock()
        self._order = InOrder()

    def pending(self, steps):
        """True when check steps among the first `steps` of this process await settle()."""
        return min(steps, CHECKS) > self._settled

    def launch(self, group, bucket, step):
        return self._order.run(bucket, lambda: self._launch(group, bucket, step))

    def _launch(self, group, bucket, step):
        buf = bucket.buffer()
        if step >= CHECKS:
            fut, fault = self._call(bucket)
            if fault:
                raise dbs.ConfigError(self._where(step, bucket.index()) + fault)
            return fut.then(lambda f: self._shaped(f, buf.shape, bucket.index(), step))
        index = bucket.index()
        ref = None
        if step == 0:  # the exact weighted sum beside the hook, issued before it
            ref = dist.all_reduce(buf / self.scale, group=self.group, async_op=True).get_future()
        fut, fault = self._call(bucket)
        if fault:
            self._found(step, index, fault, None)
            return ref.then(_value) if ref is not None else _done(torch.zeros_like(buf))
        waits = [fut] if ref is None else [fut, ref]
        return torch.futures.collect_all(waits).then(
            lambda _: self._checked(fut, ref, buf, index, step))

    def _where(self, step, index, rank=None):
        on = "" if rank is None else f" on rank {rank}"
        return f"dbs.torch: comm_hook {self.name}{on}, step {step + 1}, bucket {index}: "

    def _call(self, bucket):
        """(the hook's Future, None), or (None, what is wrong with what it returned)."""
        fut = self.hook(self.state, bucket)
        if not isinstance(fut, torch._C.Future):  # dist's futures are torch._C's
            return None, f"returned {type(fut).__name__}, not a torch.futures.Future"
        return fut, None

    @staticmethod
    def _fault(out, shape):
        if not isinstance(out, torch.Tensor):
            return f"its Future holds {type(out).__name__}, not a tensor"
        if out.shape != shape:
            return (f"returned a tensor of shape {list(out.shape)} for a bucket of shape "
                    f"{list(shape)}: a hook returns the bucket's reduced gradient, shaped as "
                    "bucket.buffer()")
        return None

    def _shaped(self, fut, shape, index, step):
        out = _value(fut)
        fault = self._fault(out, shape)
        if fault:
            raise dbs.ConfigError(self._where(step, index) + fault)
        return out

    def _checked(self, fut, ref, buf, index, step):
        out = _value(fut)
        exact = None if ref is None else _value(ref)
        fault = self._fault(out, buf.shape)
        reduces = None
        if fault is None and exact is not None and self.world > 1:
            norm = float(exact.double().pow(2).sum())
            if norm > 0:
                ratio = float((out.double() * exact.double()).sum()) / norm
                reduces = "sum" if ratio > (1 + self.world) / 2 else "mean"
                if reduces == "sum":
                    out = out / self.world  # given W (b_i / B_s) g_i, it returned W times the mean
        self._found(step, index, fault, reduces)
        if fault is None:
            return out
        return exact if exact is not None else torch.zeros_like(buf)

    def _found(self, step, index, fault, reduces):
        with self._lock:
            self._findings.append((step, index, fault, reduces))

    def settle(self, steps, gather):
        """On every rank at once (a collective), after the first `steps` steps of this
        process: raises dbs.ConfigError for the first fault any rank found in the check steps so
        far, and fixes `scale` from the first step's ratios. gather(obj) -> every rank's obj,
        in rank order."""
        with self._lock:
            mine, self._findings = self._findings, []
        every = gather(mine)
        self._settled = min(steps, CHECKS)
        for rank, found in enumerate(every):
            for step, index, fault, _ in sorted(found, key=lambda f: (f[0], f[1])):
                if fault:
                    raise dbs.ConfigError(self._where(step, index, rank) + fault)
        kinds = {f[3] for found in every for f in found if f[3]}
        if len(kinds) > 1:
            raise dbs.ConfigError(f"dbs.torch: comm_hook {self.name} returned the mean over the "
                             "ranks for some buckets and their sum for others at the first "
                             "step: dbs cannot weight its buckets into the global-batch mean")
        if kinds and self.reduces is None:
            self.reduces = kinds.pop()
            self.scale = float(self.world) if self.reduces == "mean" else 1.0


class AllreduceBytes:
    """Counts the bytes this process hands to torch.distributed.all_reduce while installed
    (install() to remove(), or as a context manager): DDP communication hooks' exchanges,
    dbs's, the model averages and any other all_reduce of the process. Hooks call all_reduce
    through the torch.distributed module, so it is replaced there by a counting wrapper, and
    put back by remove()."""

    def __init__(self):
        self.bytes = 0
        self._lock = threading.Lock()
        self._wrapped = None

    def _count(self, tensor, *args, **kwargs):
        with self._lock:
            self.bytes += tensor.numel() * tensor.element_size()
        return self._wrapped(tensor, *args, **kwargs)

    def install(self):
        if self._wrapped is not None:
            raise RuntimeError("dbs.torch: AllreduceBytes is installed already")
        self._wrapped, dist.all_reduce = dist.all_reduce, self._count
        return self

    def remove(self):
        dist.all_reduce, self._wrapped = self._wrapped, None

    def __enter__(self):
        return self.install()

    def __exit__(self, *exc):
        self.remove()
