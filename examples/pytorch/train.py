#!/usr/bin/python3
"""Fashion-MNIST with PyTorch DDP and dbs.torch: the seed CNN (conv 32/128/256, dense
1000/100/10), Adam, the global batch split across the ranks by the dbs policy.

Run one process per rank with torchrun or srun (gloo backend, CPU), with the build's
dbs-env.sh sourced (". build/dbs-env.sh": dbs importable, DBS_ROOT the checkout):
  /usr/bin/torchrun --standalone --nproc_per_node 2 --redirects 1 --tee 1 \\
      "$DBS_ROOT"/examples/pytorch/train.py --epochs 3 --train-limit 6000 \\
      --policy dbs --disturb rank=1,factor=3 --summary out/pytorch.json
(--redirects 1 --tee 1: Debian 12's torchrun fails on its own default of 0.)
--policy static is plain DDP with DistributedSampler's equal split (no dbs), for comparison.
--scheduler HOST:PORT --job ID --token-file KEY: the plans come from dbs-scheduler serve, the
embedded policy planning any epoch whose daemon plan is not usable (docs/guides/pytorch.md);
--tls-ca CA.pem speaks TLS to it, --auth munge proves the user's uid instead of a job key.
--checkpoint FILE saves the run after every epoch, --resume continues it; --trace FILE records
the run for dbs-scheduler replay, under every policy.
--comm-hook fp16|powersgd exchanges the gradients through PyTorch's compression hooks (under
dbs's weighting); --average-every H trains local SGD with a model average every H steps.
"""

import argparse
import faulthandler
import gzip
import json
import os
import signal
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

import dbs
import dbs.torch
from dbs.torch.exchange import AllreduceBytes, in_order
from dbs.torch.hook import StepTimer
from dbs.torch.trace import Recorder, run_config

DATA = "/usr/share/datasets/fashion-mnist"


def options(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        epilog="example (with BUILD/dbs-env.sh sourced): /usr/bin/torchrun --standalone "
               "--nproc_per_node 2 --redirects 1 --tee 1 \"$DBS_ROOT\"/examples/pytorch/train.py "
               "--epochs 2 --train-limit 6000 --policy dbs --disturb rank=1,factor=3 "
               "--summary out/pytorch.json")
    p.add_argument("--epochs", type=int, default=3, help="epochs to train")
    p.add_argument("--batch", type=int, default=128, help="global batch (all ranks together)")
    p.add_argument("--train-limit", type=int, default=0, help="use the first N training images (0 = all 60,000)")
    p.add_argument("--test-limit", type=int, default=0, help="use the first N test images (0 = all 10,000)")
    p.add_argument("--lr", type=float, default=0.001, help="Adam learning rate")
    p.add_argument("--threads", type=int, default=0, help="torch threads per rank (0 = torch's default)")
    p.add_argument("--seed", type=int, default=1, help="seed of the model and the epoch permutations")
    p.add_argument("--policy", default="dbs", help="dbs | static | fixed:b0,b1,... (one size per rank, summing to --batch)")
    p.add_argument("--rebalance-every", type=int, default=0, help="also re-plan every K steps (0 = per epoch)")
    p.add_argument("--scheduler", default=os.environ.get("DBS_SCHEDULER", ""),
                   help="HOST:PORT of dbs-scheduler serve: plans come from it, the embedded "
                        "policy is the fallback (empty = the embedded policy; env DBS_SCHEDULER)")
    p.add_argument("--job", default=default_job(),
                   help="job id at the daemon, the same on every rank (env DBS_JOB, else "
                        "slurm-$SLURM_JOB_ID in a Slurm job)")
    p.add_argument("--token-file", default=os.environ.get("DBS_TOKEN_FILE", ""),
                   help="the job's key for --scheduler, a file only its owner may read "
                        "(dbs-scheduler job-key --token-file TOKEN JOB; env DBS_TOKEN_FILE)")
    p.add_argument("--scheduler-timeout", type=float, default=10.0,
                   help="seconds to wait for the daemon's plan at the end of an epoch")
    p.add_argument("--scheduler-connect-timeout", type=float, default=2.0,
                   help="seconds per connection attempt to the daemon")
    p.add_argument("--tls-ca", default=os.environ.get("DBS_TLS_CA", ""),
                   help="PEM CA certificate: speak TLS to --scheduler and verify its certificate "
                        "against this CA and the HOST of --scheduler (empty = plain TCP; env "
                        "DBS_TLS_CA)")
    p.add_argument("--auth", default="auto", choices=["auto", "token", "munge"],
                   help="how the ranks prove who they are to --scheduler: token (--token-file), "
                        "munge (a munge credential of the user; the job is that uid's) or auto "
                        "(the token file when given, else munge)")
    p.add_argument("--munge-socket", default=os.environ.get("MUNGE_SOCKET", ""),
                   help="munged's socket for --auth munge (empty = munge's default; env "
                        "MUNGE_SOCKET)")
    p.add_argument("--comm-hook", default="allreduce", choices=["allreduce", "fp16", "powersgd"],
                   help="the gradient exchange: allreduce (dbs's weighted sum; DDP's mean with "
                        "--policy static), fp16 (PyTorch's fp16_compress_hook) or powersgd "
                        "(PyTorch's powerSGD_hook)")
    p.add_argument("--powersgd-rank", type=int, default=1,
                   help="--comm-hook powersgd: the rank of its low-rank approximation")
    p.add_argument("--powersgd-start", type=int, default=10,
                   help="--comm-hook powersgd: the steps of plain allreduce before it "
                        "compresses (its start_powerSGD_iter; at least 2)")
    p.add_argument("--average-every", type=int, default=None, metavar="H",
                   help="local SGD: each rank trains alone and the models are averaged every H "
                        "steps of an epoch and at its end, weighted by the samples each rank "
                        "trained (--policy static: PyTorch's PostLocalSGDOptimizer, equal "
                        "weights, every H steps); unset = synchronous")
    p.add_argument("--average-after-epochs", type=int, default=0,
                   help="with --average-every: the first epochs trained synchronously")
    p.add_argument("--average-optimizer", default="local", choices=["local", "mean"],
                   help="with --average-every: the optimizer's state stays each rank's own "
                        "(local) or is averaged with the parameters (mean; not with --policy "
                        "static)")
    p.add_argument("--disturb", action="append", default=[],
                   help="slow a rank: rank=R,factor=F[,from=E][,to=E] sleeps (F-1) x the step's compute (repeatable)")
    p.add_argument("--summary", default="", help="write the run's JSON summary here (rank 0)")
    p.add_argument("--trace", default="",
                   help="write the run's trace here (rank 0; dbs-agent's format, for "
                        "dbs-scheduler replay), under every policy, static included")
    p.add_argument("--checkpoint", default="",
                   help="after every epoch rank 0 saves the model, the optimizer, the Balancer's "
                        "state and the summary so far to this file (torch.save)")
    p.add_argument("--resume", action="store_true",
                   help="continue from --checkpoint at the epoch after the saved one (no file "
                        "there: start afresh)")
    p.add_argument("--data", default=DATA, help="folder of the Fashion-MNIST *-idx?-ubyte.gz files")
    return p.parse_args(argv)


def default_job():
    """--job's default: $DBS_JOB, else slurm-$SLURM_JOB_ID (as agents/slurm/dbs.sbatch names
    the job), else none."""
    if os.environ.get("DBS_JOB"):
        return os.environ["DBS_JOB"]
    return f"slurm-{os.environ['SLURM_JOB_ID']}" if os.environ.get("SLURM_JOB_ID") else ""


def read_idx(path, limit=0):
    """The first `limit` items (0 = all) of an IDX file (gzip) as a numpy array: uint8 images
    (n, 28, 28) or labels (n,). Only those items are inflated."""
    with gzip.open(path, "rb") as f:
        dims = f.read(4)[3]
        shape = [int.from_bytes(f.read(4), "big") for _ in range(dims)]
        if 0 < limit < shape[0]:
            shape[0] = limit
        count = int(np.prod(shape))
        raw = f.read(count)
    if len(raw) < count:
        raise ValueError(f"{path}: truncated: {len(raw)} of {count} data bytes")
    return np.frombuffer(raw, dtype=np.uint8).reshape(shape)


def fashion_mnist(folder, split, limit):
    """(images float32 (n, 1, 28, 28) in [0, 1], labels int64 (n,)) of split train or t10k: the
    first `limit` samples (0 = all)."""
    x = read_idx(os.path.join(folder, f"{split}-images-idx3-ubyte.gz"), limit)
    y = read_idx(os.path.join(folder, f"{split}-labels-idx1-ubyte.gz"), limit)
    return TensorDataset(torch.from_numpy(x.astype(np.float32) / 255.0).unsqueeze(1),
                         torch.from_numpy(y.astype(np.int64)))


class SeedCNN(nn.Module):
    """in (n, 1, 28, 28) -> logits (n, 10); 690,590 parameters."""

    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv2d(1, 32, 3), nn.Conv2d(32, 128, 3), nn.Conv2d(128, 256, 3)])
        self.drop = nn.Dropout(0.25)
        self.fc1, self.fc2, self.fc3 = nn.Linear(256, 1000), nn.Linear(1000, 100), nn.Linear(100, 10)

    def forward(self, x):
        for conv in self.convs:
            x = F.max_pool2d(F.relu(conv(x)), 2)
        x = self.drop(torch.flatten(x, 1))
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class Slowdown:
    """The --disturb specs of this rank: seconds to sleep after a step's compute."""

    def __init__(self, specs, rank, world):
        self.active = []
        for spec in specs:
            d = dbs._dbs.parse_disturbance(spec)
            if d.rank >= world:
                raise ValueError(f"--disturb {spec}: rank {d.rank}, the job has {world} ranks")
            if d.mode != "sleep":
                raise ValueError(f"--disturb {spec}: train.py injects mode=sleep only")
            if d.rank == rank:
                self.active.append(d)
        self.progress = 1.0  # 1-based epochs, fractional

    def __call__(self, compute_s):
        factor = 1.0
        for d in self.active:
            if d.active_at(self.progress):
                factor *= d.factor
        return (factor - 1.0) * compute_s


def evaluate(model, test, rank, world):
    """Accuracy on the test set, each rank counting its 1/world share."""
    model.eval()
    correct = torch.zeros(2, dtype=torch.float64)
    with torch.no_grad():
        x, y = test.tensors
        x, y = x[rank::world], y[rank::world]
        for i in range(0, len(y), 1000):
            correct[0] += (model(x[i:i + 1000]).argmax(1) == y[i:i + 1000]).sum().item()
        correct[1] = len(y)
    dist.all_reduce(correct)
    model.train()
    return correct[0].item() / max(1.0, correct[1].item())


def comm_hook(args):
    """(hook, state) of --comm-hook: one of PyTorch's DDP communication hooks, or (None, None)
    for the plain allreduce."""
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook
    if args.comm_hook == "fp16":
        return default_hooks.fp16_compress_hook, None
    if args.comm_hook == "powersgd":
        return powerSGD_hook.powerSGD_hook, powerSGD_hook.PowerSGDState(
            process_group=None, matrix_approximation_rank=args.powersgd_rank,
            start_powerSGD_iter=args.powersgd_start)
    return None, None


class StaticTiming:
    """--policy static: plain DDP (its mean allreduce, or --comm-hook's hook on one bucket after
    another as dbs.torch runs it: dbs.torch.exchange.InOrder; with --average-every PyTorch's
    post-local SGD), each step timed for the summary as dbs.torch times it
    (dbs.torch.hook.StepTimer: work between exchanges, compute, the slowdown). With --trace it
    records the run as the Balancer records its own: the plans of the library's static policy
    (the equal split), each rank's report from its steps. plan: the plan in force (a resumed
    run's, as a checkpoint keeps it; None = the first epoch's)."""

    def __init__(self, ddp, slowdown, args, samples, hook, state, post_local=None, plan=None):
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        self.timer, self.slowdown = StepTimer(), slowdown
        self.exchange, self.state = ((in_order(hook), state) if hook else
                                     (default_hooks.allreduce_hook, None))
        if post_local is not None:  # (H, warm-up steps): every rank's own gradient after those
            from torch.distributed.algorithms.ddp_comm_hooks import post_localSGD_hook as local
            self.exchange, self.state = local.post_localSGD_hook, local.PostLocalSGDState(
                process_group=None, subgroup=None, start_localSGD_iter=post_local[1],
                post_local_gradient_allreduce=False)
        ddp.register_forward_pre_hook(self.pre)
        ddp.register_comm_hook(self.state, self.hook)
        settings = dbs.Settings()
        settings.policy, settings.global_batch, settings.samples_per_epoch = "static", args.batch, samples
        self.policy = dbs._dbs.make_policy(settings, dist.get_world_size())
        self.plan = dbs.Plan.from_json(plan) if plan else self.policy.initial()
        self.trace = Recorder(args.trace)
        self.trace.open(settings, self.plan, run_config(ddp, seed=args.seed), append=bool(plan))

    def pre(self, module, inputs):
        if module.training and torch.is_grad_enabled():
            self.timer.forward(len(inputs[0]))

    def hook(self, state, bucket):
        step = self.timer.count
        if bucket.is_last():
            self.timer.backward_done(self.slowdown)
            step = self.timer.count - 1
        return self.exchange(state, bucket).then(lambda fut: self.done(fut, step))

    def done(self, fut, step):
        self.timer.allreduced(step)
        return fut.value()

    def end_epoch(self, epoch):
        """Every rank's dbs.Report of the epoch, and this rank's work seconds; the trace's
        records of it and the next plan written."""
        rank, world = dist.get_rank(), dist.get_world_size()
        timing = self.timer.epoch()
        mine = dbs._dbs.make_report(rank, epoch, self.plan.batch[rank], self.timer.take())
        every = [None] * world
        dist.all_gather_object(every, mine.to_json())
        reports = [dbs.Report.from_json(r) for r in every]
        self.plan = self.policy.next(self.plan, reports)
        self.trace.epoch(reports, timing, self.plan, "embedded")
        return reports, timing["work_s"]

    def optimizer(self, opt, every, warmup):
        """PyTorch's PostLocalSGDOptimizer around `opt`: an equal-weight model average every
        `every` steps after `warmup`; the averages' time is exchange, not work."""
        from torch.distributed.algorithms.model_averaging.averagers import PeriodicModelAverager
        from torch.distributed.optim import PostLocalSGDOptimizer
        averager = PeriodicModelAverager(period=every, warmup_steps=warmup)
        average = averager.average_parameters

        def timed(params):
            wall, cpu = time.perf_counter(), time.process_time()
            average(params)
            self.timer.exchanged(time.perf_counter() - wall, time.process_time() - cpu)
        averager.average_parameters = timed
        return PostLocalSGDOptimizer(opt, averager)


def save_checkpoint(path, args, ddp, opt, balancer, static, rows):
    """After an epoch, rank 0 saves what --resume needs (atomically: the file is whole or the
    previous one): the model, the optimizer, every rank's RNG state, where the run is (the
    Balancer's state_dict, or the static plan) and the summary's rows so far."""
    rng = [None] * dist.get_world_size()
    dist.all_gather_object(rng, torch.get_rng_state())
    if dist.get_rank() == 0:
        snapshot = {"policy": args.policy, "world": dist.get_world_size(), "epochs": rows,
                    "model": ddp.module.state_dict(), "optimizer": opt.state_dict(), "rng": rng,
                    "balancer": balancer.state_dict() if balancer else None,
                    "plan": None if balancer else static.plan.to_json()}
        torch.save(snapshot, path + ".tmp")
        os.replace(path + ".tmp", path)


def load_checkpoint(path, args, ddp, opt):
    """--resume: the checkpoint at `path` (None when there is none) loaded into the model and
    the optimizer, this rank's RNG state restored."""
    if not os.path.exists(path):
        return None
    snapshot = torch.load(path)
    for key, mine in (("policy", args.policy), ("world", dist.get_world_size())):
        if snapshot[key] != mine:
            raise ValueError(f"--resume: {path} is of a run with {key} {snapshot[key]!r}, this "
                             f"run has {mine!r}")
    ddp.module.load_state_dict(snapshot["model"])
    opt.load_state_dict(snapshot["optimizer"])
    torch.set_rng_state(snapshot["rng"][dist.get_rank()])
    return snapshot


def keep_freed_memory():
    """glibc's malloc returns a freed block above its mmap threshold (128 KiB at first) to the
    system, and trims the heap's free top, so every step maps its activations afresh and faults
    their pages in; the threshold rises only once a larger block is freed (here: the first
    evaluation). The first epoch then takes 15-20% more CPU a step than the later ones, on every
    rank, and its rates are not the run's. Blocks up to 32 MiB are kept in the heap and its top
    is kept up to 256 MiB, from the first step on. A no-op outside glibc."""
    import ctypes
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is not None:
        mallopt(-3, 32 << 20)   # M_MMAP_THRESHOLD (its largest)
        mallopt(-1, 256 << 20)  # M_TRIM_THRESHOLD


def main(args):
    keep_freed_memory()
    rank, world, _ = dbs.torch.init_process_group("gloo")
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    if args.scheduler and not args.job:
        raise ValueError("--scheduler needs --job ID (or DBS_JOB; in a Slurm job it is "
                         "slurm-$SLURM_JOB_ID)")
    if args.scheduler and args.policy == "static":
        raise ValueError("--scheduler: --policy static is plain DDP without dbs, no daemon "
                         "plans it")
    if args.average_every is not None and args.average_every < 1:
        raise ValueError(f"--average-every {args.average_every}: expected >= 1 (steps between "
                         "two model averages)")
    if args.average_after_epochs < 0 or (args.average_every is None
                                         and args.average_after_epochs):
        raise ValueError(f"--average-after-epochs {args.average_after_epochs}: expected >= 0, "
                         "with --average-every H")
    if args.average_optimizer == "mean" and (args.average_every is None
                                             or args.policy == "static"):
        raise ValueError("--average-optimizer mean needs --average-every H and dbs (PyTorch's "
                         "PostLocalSGDOptimizer averages the parameters only)")
    if args.average_every is not None and args.comm_hook != "allreduce":
        raise ValueError(f"--comm-hook {args.comm_hook} with --average-every: local steps "
                         "exchange no gradient (as PyTorch's post_localSGD_hook is the "
                         "communication hook)")
    if args.resume and not args.checkpoint:
        raise ValueError("--resume needs --checkpoint FILE, the file to continue from")
    for path in (args.summary, args.checkpoint):  # a bad path fails before training, not after
        if rank == 0 and path:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    torch.manual_seed(args.seed)
    train = fashion_mnist(args.data, "train", args.train_limit)
    test = fashion_mnist(args.data, "t10k", args.test_limit)
    slowdown = Slowdown(args.disturb, rank, world)
    ddp = DistributedDataParallel(SeedCNN())
    opt = torch.optim.Adam(ddp.parameters(), lr=args.lr)
    saved = load_checkpoint(args.checkpoint, args, ddp, opt) if args.resume else None
    hook, hook_state = comm_hook(args)

    if args.policy == "static":
        if args.batch % world:
            raise ValueError(f"--batch {args.batch}: --policy static needs a multiple of the "
                             f"{world} ranks")
        sampler = DistributedSampler(train, world, rank, shuffle=True, seed=args.seed)
        loader = DataLoader(train, batch_size=args.batch // world, sampler=sampler)
        steps = len(loader)
        post_local = (None if args.average_every is None else
                      (args.average_every, args.average_after_epochs * steps))
        timing = StaticTiming(ddp, slowdown, args, len(train), hook, hook_state, post_local,
                              saved and saved["plan"])
        balancer = None
        if post_local:
            opt = timing.optimizer(opt, *post_local)
    else:
        remote = dbs.Remote(address=args.scheduler, job=args.job, token_file=args.token_file,
                            timeout_s=args.scheduler_timeout,
                            connect_timeout_s=args.scheduler_connect_timeout,
                            tls_ca=args.tls_ca, auth=args.auth, munge_socket=args.munge_socket)
        balancer = dbs.torch.Balancer(ddp, len(train), args.batch, policy=args.policy,
                                      seed=args.seed, rebalance_every=args.rebalance_every,
                                      remote=remote, trace=args.trace,
                                      comm_hook=hook, comm_state=hook_state,
                                      average_every=args.average_every,
                                      average_after_epochs=args.average_after_epochs,
                                      average_optimizer=args.average_optimizer)
        balancer.slowdown = slowdown  # --disturb: this rank's injected sleep
        if saved:
            balancer.load_state_dict(saved["balancer"])
        if args.average_every is not None:
            opt = dbs.torch.LocalSGDOptimizer(opt, balancer)
        sampler = balancer.sampler
        loader = DataLoader(train, batch_sampler=sampler)
        steps = balancer.steps_per_epoch

    epochs = saved["epochs"] if saved else []  # the summary's rows, a resumed run's included
    if rank == 0 and saved:
        print(f"resumed from {args.checkpoint} at epoch {len(epochs) + 1}", flush=True)
    overhead = 0.0  # balancer.overhead_s at the start of the epoch
    counted = AllreduceBytes().install()  # until the process ends (os._exit below)
    for epoch in range(len(epochs), args.epochs):
        sampler.set_epoch(epoch)
        batch = list(balancer.plan.batch if balancer else timing.plan.batch)
        dist.barrier()
        start, sent = time.perf_counter(), counted.bytes
        if not balancer:
            timing.timer.begin()
        for step, (x, y) in enumerate(loader):
            slowdown.progress = 1 + epoch + step / steps
            loss = F.cross_entropy(ddp(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        dist.barrier()
        wall, sent = time.perf_counter() - start, counted.bytes - sent
        if balancer:
            reports, work = balancer.end_epoch(), balancer.work_s()
            dbs_cpu = [None] * world  # per rank, thread CPU s of dbs.torch's code this epoch
            dist.all_gather_object(dbs_cpu, balancer.overhead_s - overhead)
            overhead = balancer.overhead_s
        else:
            reports, work = timing.end_epoch(epoch)
        every = [None] * world  # per rank: (work s, bytes handed to all_reduce) of the epoch
        dist.all_gather_object(every, (work, sent))
        busy = [w for w, _ in every]
        throughput = [r.throughput() for r in reports]
        samples = sum(r.samples for r in reports)
        # as dbs-agent's busy_ideal_s: the epoch at the best split for the ranks' work rates
        # (samples over work seconds: loading, forward + backward, the optimizer update)
        rates = sum(r.samples / w for r, w in zip(reports, busy) if w > 0)
        acc = evaluate(ddp, test, rank, world)
        row = {"epoch": epoch + 1, "wall_s": wall, "batch": batch, "throughput": throughput,
               "busy_s": busy, "busy_ideal_s": samples / rates if rates > 0 else 0.0,
               "test_acc": acc, "steps": steps, "exchange_bytes": [b for *_, b in every]}
        if balancer:
            row["replans"] = balancer.replans
            row["next_batch"] = list(balancer.plan.batch)
            row["dbs_overhead_s"] = dbs_cpu
        epochs.append(row)
        if rank == 0:
            print(f"epoch {epoch + 1}: wall {wall:.2f} s, batch {batch}, img/s/rank "
                  f"{[round(v) for v in throughput]}, test_acc {acc:.4f}", flush=True)
            if args.scheduler:
                print(f"plan of epoch {epoch + 2}: {list(balancer.plan.batch)} from "
                      f"{balancer.source}", flush=True)
        if args.checkpoint:
            save_checkpoint(args.checkpoint, args, ddp, opt, balancer,
                            None if balancer else timing, epochs)

    if balancer:
        balancer.close(done=True)
    else:
        timing.trace.close()
    if rank == 0 and args.summary:
        summary = {"policy": args.policy, "world": world, "global_batch": args.batch,
                   "train_samples": len(train), "test_samples": len(test), "threads": args.threads,
                   "disturb": args.disturb, "comm_hook": args.comm_hook,
                   "average_every": args.average_every,
                   "average_after_epochs": args.average_after_epochs,
                   "epochs": epochs,
                   "test_acc": epochs[-1]["test_acc"] if epochs else 0.0}
        tmp = args.summary + ".tmp"
        with open(tmp, "w") as f:
            json.dump(summary, f, indent=1)
        os.replace(tmp, args.summary)
    dbs.torch.destroy_process_group()  # a barrier first: no hang in gloo's teardown
    # The DDP model still holds the gloo group. Freeing it (when main returns) joins gloo's
    # worker threads with the GIL held, and a worker still freeing the last collective's
    # Python-made tensors needs the GIL: torch 1.13 can deadlock there. Nothing is left to do,
    # so the process ends here, its output flushed.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    faulthandler.register(signal.SIGUSR1)  # kill -USR1 PID: every thread's Python stack on stderr
    args = options()
    try:
        main(args)
    except (ValueError, dbs.Error) as e:
        rank = os.environ.get("RANK", os.environ.get("SLURM_PROCID", "0"))
        print(f"train.py: rank {rank}: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(2)
