"""A DDP communication hook of the user's under dbs.torch (Balancer(comm_hook=, comm_state=)),
2 ranks at fixed:100,28 on a float64 MLP, one epoch of 4 steps (the last one short: 31/9):

- PyTorch's allreduce_hook (which divides by the world size) and a hook that sums over the
  ranks both give the parameters of one process on the global batch (max |diff| <= 1e-10, as
  py-same-math): dbs weights by W b_i / B_s for a hook that averages and b_i / B_s for one that
  sums, found at the first step (Balancer.comm_hook_reduces). A missing or wrong factor is off
  by ~1e-2.
- fp16_compress_hook: the same update within fp16's rounding (<= 1e-3 of the parameters'
  movement), 2 bytes per gradient value handed to all_reduce instead of 8.
- powerSGD_hook (rank 1, vanilla allreduce for 2 steps): the one-process parameters after the
  2 vanilla steps (<= 1e-10), then the bytes of rank-1 factors P and Q of each weight matrix and
  the biases uncompressed, as computed from the model's shapes.
- powerSGD_hook on a model in two buckets (worker.Wide) runs on gloo: dbs exchanges them one
  after the other (exchange.InOrder; gloo fails otherwise, as under plain DDP).
- The step timing: a hook sleeping 0.5 s per call on a model in two buckets (after DDP's first
  step; worker.Wide): the 3 sleeps of the first bucket, inside backward, are neither compute
  nor work (the model's own compute is ~0.1 s); the 4 of the last bucket are comm time.
Bytes are counted by dbs.torch.exchange.AllreduceBytes; the first step also carries dbs's
check of the hook (an exact weighted sum beside it, one more gradient's bytes)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

harness.skip_unless_ready()

import torch  # noqa: E402

import reference  # noqa: E402
import worker  # noqa: E402

TOL = 1e-10


params = list(worker.model().parameters())
values = sum(p.numel() for p in params)  # 293 float64 gradient values
after, _ = reference.sgd(reference.global_steps(), lr=0.5)
moved = [reference.max_diff(a, params) for a in after]

for hook, reduces in (("allreduce", "mean"), ("sum", "sum")):
    r0, r1 = harness.train_worker({"hook": hook})
    harness.check(r0["reduces"] == r1["reduces"] == reduces,
                  f"{hook}: the hook is found to return the {reduces} over the ranks")
    diff = max(reference.max_diff(r["params"][-1], after[-1]) for r in (r0, r1))
    harness.check(diff <= TOL, f"{hook}: after one epoch, 2 ranks vs one process, max |diff| "
                               f"{diff:.3g} <= {TOL}")
    harness.check(r0["bytes"][1:] == [8 * values] * 3,
                  f"{hook}: 8 bytes per gradient value a step: {r0['bytes']}")

r0, r1 = harness.train_worker({"hook": "fp16"})
for step in (0, 3):
    diff = max(reference.max_diff(r["params"][step], after[step]) for r in (r0, r1))
    harness.check(0 < diff <= 1e-3 * moved[step],
                  f"fp16: after step {step + 1}, |diff| to one process {diff:.3g} within fp16's "
                  f"rounding of the movement {moved[step]:.3g}")
harness.check(r0["bytes"] == [8 * values + 2 * values] + [2 * values] * 3,
              f"fp16: 2 bytes per gradient value a step (the first with dbs's check): "
              f"{r0['bytes']}")

r0, r1 = harness.train_worker({"hook": "powersgd"})
diff = max(reference.max_diff(r["params"][1], after[1]) for r in (r0, r1))
harness.check(diff <= TOL, f"powersgd: after its 2 vanilla steps, 2 ranks vs one process, max "
                           f"|diff| {diff:.3g} <= {TOL}")
factors = 0
for p in params:
    n, m = p.shape[0], p.numel() // p.shape[0]
    compress = p.dim() > 1 and (n + m) * 2 < n * m  # rank 1, PowerSGD's min_compression_rate 2
    factors += n + m if compress else p.numel()
harness.check(r0["bytes"][2:] == [8 * factors] * 2 and factors < values / 4,
              f"powersgd: {8 * factors} bytes a compressed step (P, Q and the biases), "
              f"{8 * values} uncompressed: {r0['bytes']}")
harness.check(reference.max_diff(r0["params"][-1], r1["params"][-1]) == 0,
              "powersgd: both ranks hold the same parameters")

r0, r1 = harness.train_worker({"hook": "powersgd", "wide": True})
harness.check(reference.max_diff(r0["params"][-1], r1["params"][-1]) == 0,
              "powersgd on a model in two buckets (its allreduces issued from callbacks, the "
              "buckets exchanged one after the other): both ranks hold the same parameters")

r0, r1 = harness.train_worker({"hook": "sleep:0.5", "wide": True})
harness.check(r0["hook_calls"] == [True] + [False, True] * 3,
              f"the model is in one bucket at the first step, in two later: {r0['hook_calls']}")
for rank, r in enumerate((r0, r1)):
    rep = r["reports"][0][rank]
    work = sum(n * mean for _, n, mean, *_ in rep["work"])
    harness.check(rep["compute_s"] < 1.0 and work < 1.0 and rep["comm_s"] >= 2.0,
                  f"rank {rank}: the hook's 3 sleeps inside backward are not compute "
                  f"({rep['compute_s']:.2f} s) nor work ({work:.2f} s), its 4 sleeps after "
                  f"backward are comm ({rep['comm_s']:.2f} s)")
