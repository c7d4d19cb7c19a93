"""Single-process references for the python suite's mathematics tests: worker.py's model
trained with SGD on chosen samples of worker.py's data, epoch 0's permutation of seed 5."""

import torch
import torch.nn.functional as F

import worker
from dbs import _dbs


def permutation():
    return torch.from_numpy(_dbs.permutation(worker.N, 5, 0))


def global_steps():
    """The sample indices of epoch 0's global steps (B, B, B, then the short last one)."""
    perm = permutation()
    return [perm[s:s + worker.B] for s in range(0, worker.N, worker.B)]


def rank_steps(sizes, rank):
    """Rank `rank`'s indices of each global step, sizes[s] being every rank's samples of step
    s (the ranks' slices in rank order, as the sampler cuts them)."""
    out = []
    for idx, every in zip(global_steps(), sizes):
        lo = sum(every[:rank])
        out.append(idx[lo:lo + every[rank]])
    return out


def sgd(steps, lr, momentum=0.0):
    """One process training on each index set of `steps` in turn (the mean loss over it):
    (the parameters after each step, the momentum buffers at the end)."""
    train = worker.data()
    net = worker.model()
    opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=momentum)
    after = []
    for idx in steps:
        loss = F.cross_entropy(net(train.tensors[0][idx]), train.tensors[1][idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        after.append([p.detach().clone() for p in net.parameters()])
    return after, [opt.state[p].get("momentum_buffer") for p in net.parameters()]


def max_diff(a, b):
    """The largest absolute difference between two lists of tensors of the same shapes."""
    return max((x - y).abs().max().item() for x, y in zip(a, b))
