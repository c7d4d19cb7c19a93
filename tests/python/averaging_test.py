"""Every-H model averaging under dbs.torch (Balancer(average_every=H) with LocalSGDOptimizer),
2 ranks at fixed:100,28 on a float64 MLP, epochs of 4 steps (the last one short: 31/9):

- H = 1 with plain SGD is synchronous dbs: after every step the parameters of one process on
  the global batch, max |diff| <= 1e-10 (float64; only the summation order differs: an
  average adds the ranks' parameters, the synchronous step their gradients).
- H = 4, SGD with momentum 0.9: between averages each rank holds the model it trained alone on
  its own slices (<= 1e-10 to that rank trained by itself); the one average, at the epoch's
  end, is the mean of the two models weighted by the samples each trained (331 and 93; <=
  1e-10), not their equal-weight mean; the momentum buffers stay each rank's own, or with
  average_optimizer="mean" are averaged with the same weights.
- The post-local schedule: average_after_epochs=1 and H=3 over 2 epochs: epoch 1 synchronous (one
  process's parameters, a gradient allreduce every step), then averages after step 3 and at
  the end of epoch 2 only (bytes handed to all_reduce per step), the ranks' models different
  between them.
  The planner's settings carry H and the synchronous epochs (the trace and replay know them).
- state_dict between two averages keeps each rank's samples since the last one, and a new
  Balancer that loads it holds them.
- rebalance_every a multiple of H is served: re-plans at the averages."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

harness.skip_unless_ready()

import torch  # noqa: E402

import reference  # noqa: E402
import worker  # noqa: E402

TOL = 1e-10
GRADIENT = 8 * sum(p.numel() for p in worker.model().parameters())  # bytes of one float64 copy
SIZES = [[100, 28]] * 3 + [[31, 9]]  # fixed:100,28 and the short last step


def mix(a, b, wa, wb):
    """The weighted mean of two lists of tensors."""
    return [(wa * x + wb * y) / (wa + wb) for x, y in zip(a, b)]


sync, _ = reference.sgd(reference.global_steps(), lr=0.5)

r0, r1 = harness.train_worker({"average_every": 1})
diff = max(reference.max_diff(r["params"][s], sync[s]) for r in (r0, r1) for s in range(4))
harness.check(diff <= TOL, f"H=1, plain SGD: after each of the 4 steps, the parameters of one "
                           f"process on the global batch, max |diff| {diff:.3g} <= {TOL}")
harness.check(r0["averages"] == [1, 2, 3, 4] and r0["bytes"] == [GRADIENT] * 4,
              f"H=1: an average of the parameters after every step: {r0['averages']}, "
              f"{r0['bytes']} bytes")

own = [reference.sgd(reference.rank_steps(SIZES, rank), lr=0.5, momentum=0.9)
       for rank in (0, 1)]  # each rank trained alone: (parameters per step, momentum buffers)
samples = [sum(s[rank] for s in SIZES) for rank in (0, 1)]
weighted = mix(own[0][0][3], own[1][0][3], *samples)
equal = mix(own[0][0][3], own[1][0][3], 1, 1)
for state in ("local", "mean"):
    r0, r1 = harness.train_worker({"average_every": 4, "momentum": 0.9,
                                   "average_optimizer": state})
    name = f"H=4, momentum, average_optimizer={state}"
    diff = max(reference.max_diff(r["params"][s], own[rank][0][s])
               for rank, r in enumerate((r0, r1)) for s in range(3))
    harness.check(diff <= TOL, f"{name}: before the average each rank holds the model it "
                               f"trained alone, max |diff| {diff:.3g} <= {TOL}")
    diff = max(reference.max_diff(r["params"][3], weighted) for r in (r0, r1))
    far = reference.max_diff(weighted, equal)
    harness.check(diff <= TOL and far > 1e-3,
                  f"{name}: the average is the models' mean weighted by samples {samples}, max "
                  f"|diff| {diff:.3g} <= {TOL} (the equal-weight mean is {far:.3g} away)")
    harness.check(r0["averages"] == [0, 0, 0, 1]
                  and r0["bytes"] == [0, 0, 0, GRADIENT * (2 if state == "mean" else 1)],
                  f"{name}: one average, at the epoch's end, of the parameters"
                  + (" and the momentum buffers" if state == "mean" else "")
                  + f": {r0['bytes']} bytes")
    want = ([own[0][1], own[1][1]] if state == "local" else
            [mix(own[0][1], own[1][1], *samples)] * 2)
    diff = max(reference.max_diff(r["momentum"], w) for r, w in zip((r0, r1), want))
    harness.check(diff <= TOL, f"{name}: the momentum buffers are "
                               + ("each rank's own" if state == "local" else "averaged alike")
                               + f", max |diff| {diff:.3g} <= {TOL}")

r0, r1 = harness.train_worker({"average_every": 3, "average_after_epochs": 1, "epochs": 2,
                               "state_at": 6})
diff = max(reference.max_diff(r["params"][s], sync[s]) for r in (r0, r1) for s in range(4))
harness.check(diff <= TOL, f"average_after_epochs=1: epoch 1 is synchronous dbs, max |diff| to "
                           f"one process {diff:.3g} <= {TOL}")
harness.check(r0["bytes"] == [GRADIENT] * 4 + [0, 0, GRADIENT, GRADIENT]
              and r0["averages"] == [0] * 4 + [0, 0, 1, 2],
              f"average_after_epochs=1, H=3: a gradient allreduce every step of epoch 1, then "
              f"averages after step 3 and at the end of epoch 2: {r0['bytes']} bytes")
harness.check(r0["settings"].get("average_every") == 3
              and r0["settings"].get("average_after_epochs") == 1,
              f"the planner's settings (which the trace's header and the daemon get) carry the "
              f"averaging period and the synchronous epochs: {r0['settings']}")
apart = [reference.max_diff(r0["params"][s], r1["params"][s]) for s in range(8)]
harness.check(apart[3] == 0 and apart[4] > 1e-3 and apart[5] > 1e-3 and apart[6] == 0
              and apart[7] == 0,
              f"the ranks' models differ between averages only: {[f'{d:.2g}' for d in apart]}")
harness.check(r0["state"]["averaging"]["since"] == [200, 56]
              and r0["resumed"]["averaging"]["since"] == [200, 56],
              f"state_dict after 2 local steps keeps the samples since the last average, and a "
              f"Balancer that loads it holds them: {r0['state'].get('averaging')}, "
              f"{r0['resumed'].get('averaging')}")

r0, r1 = harness.train_worker({"average_every": 2, "rebalance_every": 2})
harness.check(r0["bytes"] == [0, GRADIENT, 0, GRADIENT] and r0["averages"] == [0, 1, 1, 2]
              and reference.max_diff(r0["params"][1], r1["params"][1]) == 0,
              f"rebalance_every=2 with H=2: the re-plans come at the averages, which stay where "
              f"they were: {r0['bytes']} bytes")
