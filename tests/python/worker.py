"""One rank of the python suite's distributed tests (started by harness.ranks from the tests).

  worker.py math OUT.pt            fixed:100,28 on a small float64 MLP, SGD: the parameters
                                   after step 1 and after epoch 1 (rank 0 saves them)
  worker.py run  LOG EPOCHS [STOP_EPOCH STOP_STEP STATE] [--resume STATE]
                                   policy dbs; logs every step's indices per rank; stops
                                   after step STOP_STEP of epoch STOP_EPOCH saving state_dict
  worker.py train OUT.pt JSON       a small float64 MLP (two Linear layers, SGD), trained with
                                   the options of JSON (train()'s): each rank saves OUT.pt.RANK
                                   with its parameters after every step, the bytes it handed
                                   to all_reduce in every step, the sizes and reports
  worker.py bad-exchange           every case of BAD_EXCHANGE in turn (comm_hook and
                                   average_every), as worker.py bad
  worker.py bad                    every case of BAD_EMBEDDED in turn, planned by the embedded
                                   policy; prints "CASE: Type: message" for each exception
                                   (Type followed by "(not a ValueError)" where it is not one)
                                   and goes on with the next case
  worker.py bad-daemon HOST:PORT   every case of BAD_DAEMON in turn the same way, planned by
                                   the daemon at HOST:PORT (job py-bad)
  worker.py trace POLICY PATH [CGROUP]
                                   Balancer(policy=POLICY, trace=PATH), 3 epochs; a
                                   dbs.ConfigError of the constructor printed as "trace: Type:
                                   message" (exit 0); with CGROUP (a CPU cgroup's directory)
                                   rank 1 first moves itself into it
  worker.py foreign HOST:PORT EPOCHS
                                   job py-foreign planned by the (fake) daemon at HOST:PORT:
                                   prints "epoch E: Type: message" for an exception of
                                   end_epoch, catches dbs.PlanError and trains on, then "epoch
                                   E: SOURCE [b0, b1]" (the next plan) and "finished N epochs"
"""

import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

import dbs.torch
import dbs.torch.exchange

N = 3 * 128 + 40  # 4 steps of the global batch 128, the last one short (40)
B = 128


def data():
    g = torch.Generator().manual_seed(7)
    x = torch.randn(N, 12, generator=g, dtype=torch.float64)
    y = torch.randint(0, 5, (N,), generator=g)
    return TensorDataset(x, y)


def model():
    torch.manual_seed(3)
    return torch.nn.Sequential(torch.nn.Linear(12, 16), torch.nn.Tanh(),
                               torch.nn.Linear(16, 5)).double()


class Wide(torch.nn.Module):
    """model() and a parameter of 150,000 float64 values added to every logit as their sum:
    the loss does not change (a softmax does not see a constant added to all its inputs), and
    it costs little, but DDP puts it in a gradient bucket of its own after its first step
    (bucket_cap_mb 0.1; one bucket at that step)."""

    def __init__(self):
        super().__init__()
        self.net = model()
        self.big = torch.nn.Parameter(torch.zeros(150000, dtype=torch.float64))

    def forward(self, x):
        return self.net(x) + self.big.sum()


def math(out):
    rank = dist.get_rank()
    ddp = DistributedDataParallel(model())
    train = data()
    bal = dbs.torch.Balancer(ddp, len(train), B, policy="fixed:100,28", seed=5)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.5)
    bal.set_epoch(0)
    saved, sizes = {}, []
    for step, (x, y) in enumerate(DataLoader(train, batch_sampler=bal.sampler)):
        sizes.append(len(y))
        loss = F.cross_entropy(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step == 0:
            saved["step"] = [p.detach().clone() for p in ddp.module.parameters()]
    saved["epoch"] = [p.detach().clone() for p in ddp.module.parameters()]
    every = [None] * dist.get_world_size()
    dist.all_gather_object(every, sizes)
    saved["sizes"] = every
    saved["reports"] = [json.loads(r.to_json()) for r in bal.end_epoch()]
    if rank == 0:
        torch.save(saved, out)


HOOK_CALLS = []  # is_last() of each bucket hook_of("sleep:S") was called with


def hook_of(name):
    """(comm_hook, comm_state) for train()'s option "hook"."""
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook
    if name == "allreduce":  # PyTorch's mean allreduce
        return default_hooks.allreduce_hook, None
    if name == "fp16":
        return default_hooks.fp16_compress_hook, None
    if name == "powersgd":  # vanilla allreduce at steps 1-2, rank-1 PowerSGD from step 3
        return powerSGD_hook.powerSGD_hook, powerSGD_hook.PowerSGDState(
            process_group=None, matrix_approximation_rank=1, start_powerSGD_iter=2)
    if name == "sum":  # a hook that sums over the ranks (no division by the world size)
        return (lambda group, bucket: dist.all_reduce(bucket.buffer(), async_op=True)
                .get_future().then(lambda f: f.value()[0])), None
    if name.startswith("sleep:"):  # allreduce_hook after sleeping that many s in every call
        pause = float(name.split(":")[1])

        def sleepy(group, bucket):
            HOOK_CALLS.append(bucket.is_last())
            time.sleep(pause)
            return default_hooks.allreduce_hook(group, bucket)
        return sleepy, None
    raise SystemExit(f"worker.py: unknown hook {name}")


def train(out, options):
    """Options (JSON): policy, epochs (1), lr (0.5), momentum (0), hook (hook_of's name),
    wide (Wide() with bucket_cap_mb 0.1), average_every, average_after_epochs,
    average_optimizer, rebalance_every, state_at (save the Balancer's state_dict after that
    many steps, and what a new Balancer holds after loading it)."""
    o = dict({"policy": "fixed:100,28", "epochs": 1, "lr": 0.5, "momentum": 0.0}, **options)
    rank = dist.get_rank()
    ddp = (DistributedDataParallel(Wide(), bucket_cap_mb=0.1) if o.get("wide") else
           DistributedDataParallel(model()))
    train = data()
    hook, state = hook_of(o["hook"]) if "hook" in o else (None, None)
    bal = dbs.torch.Balancer(ddp, len(train), B, policy=o["policy"], seed=5, comm_hook=hook,
                             comm_state=state, average_every=o.get("average_every"),
                             average_after_epochs=o.get("average_after_epochs", 0),
                             average_optimizer=o.get("average_optimizer", "local"),
                             rebalance_every=o.get("rebalance_every", 0))
    opt = torch.optim.SGD(ddp.parameters(), lr=o["lr"], momentum=o["momentum"])
    if o.get("average_every"):
        opt = dbs.torch.LocalSGDOptimizer(opt, bal)
    saved = {"params": [], "bytes": [], "sizes": [], "reports": [], "averages": []}
    with dbs.torch.exchange.AllreduceBytes() as counted:
        for epoch in range(o["epochs"]):
            bal.set_epoch(epoch)
            for x, y in DataLoader(train, batch_sampler=bal.sampler):
                before = counted.bytes
                loss = F.cross_entropy(ddp(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                saved["bytes"].append(counted.bytes - before)
                saved["sizes"].append(len(y))
                saved["params"].append([p.detach().clone() for p in ddp.module.parameters()])
                saved["averages"].append(bal.averages)
                if len(saved["sizes"]) == o.get("state_at"):
                    saved["state"] = bal.state_dict()
            saved["reports"].append([json.loads(r.to_json()) for r in bal.end_epoch()])
    saved["momentum"] = [opt.state[p].get("momentum_buffer") for p in ddp.module.parameters()]
    saved["reduces"] = bal.comm_hook_reduces
    saved["settings"] = json.loads(bal.settings.to_json())  # the planner's and the trace's
    saved["hook_calls"] = HOOK_CALLS
    if "state" in saved:
        again = dbs.torch.Balancer(DistributedDataParallel(model()), len(train), B,
                                   policy=o["policy"], seed=5,
                                   average_every=o.get("average_every"),
                                   average_after_epochs=o.get("average_after_epochs", 0))
        again.load_state_dict(saved["state"])
        saved["resumed"] = again.state_dict()
    torch.save(saved, f"{out}.{rank}")


def run(log, epochs, stop=None, resume=None):
    rank = dist.get_rank()
    ddp = DistributedDataParallel(model())
    train = data()
    bal = dbs.torch.Balancer(ddp, len(train), B, policy="dbs", seed=5, min_gain=0.0)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    first = 0
    if resume:
        bal.load_state_dict(torch.load(resume))
        first = bal.state_dict()["epoch"]
    steps = []  # (epoch, step, indices of this rank)
    for epoch in range(first, epochs):
        bal.set_epoch(epoch)
        step = bal.state_dict()["step"]
        for x, idx in DataLoader(TensorDataset(train.tensors[0], torch.arange(N)),
                                 batch_sampler=bal.sampler):
            steps.append((epoch, step, idx.tolist()))
            loss = F.cross_entropy(ddp(x), train.tensors[1][idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            if stop and (epoch, step) == (stop[0], stop[1]):
                if rank == 0:
                    torch.save(bal.state_dict(), stop[2])
                return save_log(log, steps)
    save_log(log, steps)


def save_log(log, steps):
    every = [None] * dist.get_world_size()
    dist.all_gather_object(every, steps)
    if dist.get_rank() == 0:
        with open(log, "w") as f:
            json.dump(every, f)


def bad(case, scheduler=""):
    ddp = DistributedDataParallel(model())
    rank = dist.get_rank()
    daemon = {"remote": dbs.Remote(address=scheduler, job="py-bad" if scheduler else "")}
    if case == "world-plan":  # a state_dict from a run of 3 ranks
        bal = dbs.torch.Balancer(ddp, N, B, policy="static", seed=5, **daemon)
        state = bal.state_dict()
        plan = json.loads(state["plan"])
        plan.update(batch=[43, 43, 42], offset=[0, 43, 86], throughput=[0, 0, 0])
        state["plan"] = json.dumps(plan)
        bal.load_state_dict(state)
    elif case == "disagree":  # rank 1 started with another global batch
        dbs.torch.Balancer(ddp, N, B if rank == 0 else 64, seed=5, **daemon)
    elif case == "small-dataset":
        dbs.torch.Balancer(ddp, 100, B, seed=5, **daemon)
    elif case == "fixed-length":
        dbs.torch.Balancer(ddp, N, B, policy="fixed:100,20,8", seed=5, **daemon)
    elif case == "no-job":
        dbs.torch.Balancer(ddp, N, B, seed=5, remote=dbs.Remote(address=scheduler))
    elif case == "bad-address":
        dbs.torch.Balancer(ddp, N, B, seed=5, remote=dbs.Remote(address="localhost", job="py-bad"))
    elif case == "job-disagree":  # each rank names its own job at the daemon
        remote = dbs.Remote(address=scheduler, job=f"py-bad-{rank}")
        dbs.torch.Balancer(ddp, N, B, seed=5, remote=remote)
    elif case == "token-one-rank":  # rank 1's node lacks the job key
        key = "" if rank == 0 else "/nonexistent/job.key"
        remote = dbs.Remote(address=scheduler, job="py-bad", token_file=key)
        dbs.torch.Balancer(ddp, N, B, seed=5, remote=remote)
    elif case == "set-epoch":  # resumed after epoch 0, the loop restarted at the saved epoch
        bal = dbs.torch.Balancer(ddp, N, B, seed=5, **daemon)
        train_epoch(ddp, bal, DataLoader(data(), batch_sampler=bal.sampler))
        bal.end_epoch()
        state = bal.state_dict()
        again = dbs.torch.Balancer(DistributedDataParallel(model()), N, B, seed=5, **daemon)
        again.load_state_dict(state)
        again.set_epoch(0)
    elif case == "state-before-end":  # the epoch's steps done, its end not reported
        bal = dbs.torch.Balancer(ddp, N, B, seed=5, **daemon)
        train_epoch(ddp, bal, DataLoader(data(), batch_sampler=bal.sampler))
        bal.state_dict()
    elif case == "loader-bypass":  # DDP's usual loader kept beside the Balancer
        bal = dbs.torch.Balancer(ddp, N, B, seed=5, **daemon)
        train = data()
        train_epoch(ddp, bal, DataLoader(train, batch_size=B // dist.get_world_size(),
                                         sampler=DistributedSampler(train)))
    else:
        raise SystemExit(f"worker.py: unknown case {case}")


def train_epoch(ddp, bal, loader, epoch=0):
    """Epoch `epoch` of the Balancer's run, its samples from `loader`, SGD."""
    bal.set_epoch(epoch)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    for x, y in loader:
        loss = F.cross_entropy(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()


def bad_exchange(case):
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    ddp = DistributedDataParallel(model())
    rank = dist.get_rank()
    opts = {}
    if case == "average-every-0":
        opts = {"average_every": 0}
    elif case == "rebalance-in-period":
        opts = {"average_every": 4, "rebalance_every": 6}
    elif case == "hook-with-averaging":
        opts = {"average_every": 4, "comm_hook": default_hooks.fp16_compress_hook}
    elif case == "average-optimizer-both":
        opts = {"average_every": 4, "average_optimizer": "both"}
    elif case == "average-after-epochs-alone":
        opts = {"average_after_epochs": 1}
    elif case == "hook-disagree":  # rank 1 compresses, rank 0 does not
        opts = {"comm_hook": default_hooks.fp16_compress_hook if rank == 1 else None}
    elif case == "wrong-shape":  # rank 1's hook returns 3 values at the first step
        opts = {"comm_hook": lambda s, bucket: default_hooks.allreduce_hook(s, bucket).then(
            lambda f: f.value()[:3] if rank == 1 else f.value())}
    elif case == "wrong-shape-later":  # rank 0's hook returns a bigger tensor at step 2
        calls = []

        def later(s, bucket):
            calls.append(1)
            return default_hooks.allreduce_hook(s, bucket).then(
                lambda f: torch.cat([f.value(), f.value()]) if rank == 0 and len(calls) == 2
                else f.value())
        opts = {"comm_hook": later}
    elif case == "not-a-future":
        opts = {"comm_hook": lambda s, bucket: bucket.buffer()}
    elif case == "no-wrapper":
        opts = {"average_every": 2}
    else:
        raise SystemExit(f"worker.py: unknown case {case}")
    bal = dbs.torch.Balancer(ddp, N, B, policy="fixed:100,28", seed=5, **opts)
    train_epoch(ddp, bal, DataLoader(data(), batch_sampler=bal.sampler))
    bal.end_epoch()


BAD_EXCHANGE = ["average-every-0", "rebalance-in-period", "hook-with-averaging",
                "average-optimizer-both", "average-after-epochs-alone", "hook-disagree",
                "wrong-shape", "wrong-shape-later", "not-a-future", "no-wrapper"]
BAD_EMBEDDED = ["world-plan", "disagree", "small-dataset", "set-epoch", "state-before-end",
                "loader-bypass"]
BAD_DAEMON = ["world-plan", "disagree", "small-dataset", "fixed-length", "no-job", "bad-address",
              "job-disagree", "token-one-rank"]


def bad_each(cases, scheduler="", run=bad):
    """Each case must raise on every rank (a rank that did not would wait in the next case's
    collectives, and the test's timeout ends the run)."""
    for case in cases:
        try:
            run(case, scheduler) if run is bad else run(case)
            print(f"{case}: no exception", flush=True)
        except (ValueError, RuntimeError, dbs.Error) as e:
            also = "" if isinstance(e, ValueError) else " (not a ValueError)"
            print(f"{case}: {type(e).__name__}{also}: {e}", flush=True)


def trace(policy, path, cgroup=""):
    """Balancer(trace=path) over 3 epochs; with `cgroup` (a CPU cgroup's directory), rank 1
    first moves itself into it, held to that cgroup's quota."""
    if cgroup and dist.get_rank() == 1:
        with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
    ddp = DistributedDataParallel(model())
    train = data()
    try:
        bal = dbs.torch.Balancer(ddp, len(train), B, policy=policy, seed=5, trace=path)
    except dbs.ConfigError as e:
        print(f"trace: {type(e).__name__}: {e}", flush=True)
        return
    for epoch in range(3):
        train_epoch(ddp, bal, DataLoader(train, batch_sampler=bal.sampler), epoch)
        bal.end_epoch()
    bal.close()


def foreign(scheduler, epochs):
    ddp = DistributedDataParallel(model())
    train = data()
    bal = dbs.torch.Balancer(ddp, len(train), B, seed=5,
                             remote=dbs.Remote(address=scheduler, job="py-foreign", timeout_s=3))
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    done = 0
    for epoch in range(epochs):
        bal.set_epoch(epoch)
        for x, y in DataLoader(train, batch_sampler=bal.sampler):
            loss = F.cross_entropy(ddp(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        try:
            bal.end_epoch()
        except dbs.PlanError as e:
            print(f"epoch {epoch}: {type(e).__name__}: {e}", flush=True)
        print(f"epoch {epoch}: {bal.source} {list(bal.plan.batch)}", flush=True)
        done += 1
    bal.close()
    print(f"finished {done} epochs", flush=True)


if __name__ == "__main__":
    dbs.torch.init_process_group("gloo")
    torch.set_num_threads(1)
    mode, rest = sys.argv[1], sys.argv[2:]
    if mode == "math":
        math(rest[0])
    elif mode == "run":
        resume = rest[rest.index("--resume") + 1] if "--resume" in rest else None
        pos = [a for a in rest if a != "--resume" and a != resume]
        stop = (int(pos[2]), int(pos[3]), pos[4]) if len(pos) > 2 else None
        run(pos[0], int(pos[1]), stop, resume)
    elif mode == "train":
        train(rest[0], json.loads(rest[1]))
    elif mode == "bad-exchange":
        bad_each(BAD_EXCHANGE, run=bad_exchange)
    elif mode == "bad-daemon":
        bad_each(BAD_DAEMON, rest[0])
    elif mode == "bad":
        bad_each(BAD_EMBEDDED)
    elif mode == "trace":
        trace(*rest)
    elif mode == "foreign":
        foreign(rest[0], int(rest[1]))
    else:
        raise SystemExit(f"worker.py: unknown mode {mode}")
    dbs.torch.destroy_process_group()
