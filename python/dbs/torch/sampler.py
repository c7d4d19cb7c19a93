"""The batch sampler of dbs.torch: this rank's samples of every global step under the plan.

All ranks draw the epoch's permutation pi_e (the library's, the same as dbs-agent's for the
seed). Step s trains on the global batch pi_e[s*B : s*B + B]; rank i takes the slice
[o_i, o_i + b_i) of it, with the step's sizes from the library's step rule (the short last step
split in the plan's proportions). So the samples of a global step do not depend on the plan.
"""

import time

import dbs
from dbs import _dbs


class BatchSampler:
    """Give it to DataLoader as batch_sampler: DataLoader(dataset, batch_sampler=sampler).
    Owned by a Balancer, which keeps the epoch, the steps done and the plan; set_epoch,
    state_dict and load_state_dict are the Balancer's. (DataLoader's own `loader.sampler` is
    then a default one without set_epoch: call balancer.set_epoch, or
    loader.batch_sampler.set_epoch.)"""

    def __init__(self, balancer):
        self._balancer = balancer

    def set_epoch(self, epoch):
        """Starts epoch `epoch` (0-based); epochs run in order, the previous one finished."""
        self._balancer.set_epoch(epoch)

    def state_dict(self):
        return self._balancer.state_dict()

    def load_state_dict(self, state):
        self._balancer.load_state_dict(state)

    def __len__(self):
        return self._balancer.steps_per_epoch

    def __iter__(self):
        """This rank's indices of each step; the CPU time of making them goes to
        Balancer.overhead_s."""
        b = self._balancer
        b._begin_epoch()
        cpu = time.thread_time()
        perm = _dbs.permutation(b.dataset_size, b.seed, b.epoch)
        first = b._done
        for s in range(first, b.steps_per_epoch):
            if s > first:
                b._before_step(s)  # counts its own CPU time
                cpu = time.thread_time()
            start = s * b.global_batch
            sizes = _dbs.step_batch(b.plan, min(b.global_batch, b.dataset_size - start))
            if 0 in sizes:  # the same sizes on every rank: all raise here, none waits
                raise dbs.ConfigError(
                    f"dbs.torch: step {s} of epoch {b.epoch} has {sum(sizes)} samples, split "
                    f"{sizes}: rank {sizes.index(0)} would get none. Use a dataset size whose "
                    f"remainder modulo global_batch {b.global_batch} is 0 or larger")
            lo = start + _dbs.offsets_of(sizes)[b.rank]
            indices = perm[lo:lo + sizes[b.rank]].tolist()
            b.overhead_s += time.thread_time() - cpu
            if s == first:  # the epoch's first step: its work window opens with its loading
                b._clock.timer.begin()
            b._given = s + 1
            yield indices
