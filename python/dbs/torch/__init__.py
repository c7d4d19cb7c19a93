"""dbs.torch: dynamic batch sizes for PyTorch DistributedDataParallel.

    rank, world, _ = dbs.torch.init_process_group("gloo")     # torchrun or srun
    ddp = DistributedDataParallel(model)
    balancer = dbs.torch.Balancer(ddp, len(train), global_batch=128, policy="dbs")
    loader = DataLoader(train, batch_sampler=balancer.sampler)
    for epoch in range(epochs):
        balancer.set_epoch(epoch)
        for x, y in loader: ...                # the ordinary mean-reduced loss and step
        balancer.end_epoch()                   # optional: the reports of the epoch
    dbs.torch.destroy_process_group()          # a barrier, then dist's (no hang at exit)

Balancer(..., scheduler="HOST:PORT", job="ID", token_file="KEY") takes the end-of-epoch plans
from dbs-scheduler serve (the embedded policy plans whenever the daemon's plan is not usable;
a plan for another job also raises dbs.PlanError on every rank, the embedded plan in force);
balancer.close() after the last epoch says goodbye to it. Balancer(..., trace="run.jsonl")
records the run for dbs-scheduler replay. balancer.state_dict() / load_state_dict() resume a
run, whose loop then starts at balancer.epoch. Bad settings raise dbs.ConfigError (a
ValueError) on every rank.
Balancer(..., comm_hook=fp16_compress_hook) composes dbs with a DDP communication hook;
Balancer(..., average_every=H) with opt = dbs.torch.LocalSGDOptimizer(opt, balancer) trains
local SGD with sample-weighted model averages. See docs/guides/pytorch.md.
"""

from dbs.torch.averaging import LocalSGDOptimizer
from dbs.torch.balancer import Balancer
from dbs.torch.launch import destroy_process_group, init_process_group, ranks
from dbs.torch.sampler import BatchSampler

__all__ = ["Balancer", "BatchSampler", "LocalSGDOptimizer", "destroy_process_group",
           "init_process_group", "ranks"]
