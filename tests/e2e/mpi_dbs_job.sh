# A 2-rank DBS job with rank 1 disturbed x3 from epoch 2: every plan keeps the global batch; the
# first plan made from a disturbed epoch follows the rates it was made from (b1 within 3 samples
# of 128 * r1 / (r0 + r1)); rank 1's own rate fell 2.2x to 4.3x from epoch 1 to epoch 2, by
# itself or over what rank 0's rate did in the same epochs (other work on the machine can slow
# both ranks: 1.6x in one run, so that rank 1's fell 4.9x); and that
# plan gives rank 1 between 16 and 40 samples (96/32 nominal; a x2 slowdown gives 43, outside;
# an over-reaction to the minimum batch falls below). The bounds are wide because the rates move
# on a shared 2-core machine: the undisturbed ranks of epoch 1 can differ by 20-40%, so epoch 2
# runs at 73/55 rather than 64/64, and with rank 1 asleep a third of the time rank 0 measured up
# to 1.35x its epoch-1 rate, which put b1 at 21. 6,000 samples keep epochs near 0.4 s. The plans
# made from later epochs give rank 1 less than rank 0. The trace holds the documented records.
source "$(dirname "$0")/common.bash"
"${MPIRUN[@]}" -np 2 "$AGENT" --model lenet --epochs 4 --train-limit 6000 --test-limit 500 \
  --threads 1 --no-progress --disturb rank=1,factor=3,from=2 --trace "$TMP/t.jsonl" \
  --summary "$TMP/s.json" >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "job failed"; }
cat "$TMP/out"
python3 - "$TMP/t.jsonl" <<'PY' || fail "trace check"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
head = lines[0]
assert head["type"] == "header" and head["format"] == "dbs-trace" and head["version"] == 2, head
kinds = {}
for r in lines[1:]:
    kinds.setdefault(r["type"], []).append(r)
assert len(kinds["rank"]) == 8 and len(kinds["eval"]) == 4, {k: len(v) for k, v in kinds.items()}
plans = kinds["plan"]
assert all(sum(p["batch"]) == 128 == p["global_batch"] for p in plans)
assert all(p["offset"] == [0, p["batch"][0]] for p in plans)
late = [p for p in plans if p["epoch"] >= 3]
assert len(late) == 3 and all(p["batch"][1] < p["batch"][0] for p in late), late
first = late[0]
r0, r1 = first["throughput"]
assert abs(first["batch"][1] - 128 * r1 / (r0 + r1)) <= 3, ("the plan does not follow its rates", first)
rate = {(r["epoch"], r["rank"]): r["throughput"] for r in kinds["rank"]}
# Other work on the machine moves both ranks' rates; the disturbance moves rank 1's alone.
alone = rate[(1, 1)] / rate[(2, 1)]
slowdown = min((alone, alone / (rate[(1, 0)] / rate[(2, 0)])), key=lambda s: abs(s - 3))
assert 2.2 <= slowdown <= 4.3, ("rank 1's rate did not fall about 3x in epoch 2, by itself or "
                                "over rank 0's", alone, slowdown, rate)
assert 16 <= first["batch"][1] <= 40, ("the plan from epoch 2 is not near 96/32", first)
assert {d["epoch"] for d in kinds["disturbance"]} == {2, 3, 4}
for r in kinds["rank"]:
    for k in ("batch", "samples", "compute_s", "comm_s", "throughput", "host"):
        assert k in r, (k, r)
print("plans:", [(p["epoch"], p["batch"]) for p in plans], "rank 1 slowed %.2fx" % slowdown)
PY
# The summary's busy figures agree with the trace: per epoch and rank the part of the epoch the
# rank worked, in (0, 1], and busy_ideal_s = N / sum_r samples_r / (busy_r * wall_s), the same as
# in the trace's eval record.
python3 - "$TMP/s.json" "$TMP/t.jsonl" <<'PY' || fail "summary busy check"
import json, sys
summary = json.load(open(sys.argv[1]))
lines = [json.loads(l) for l in open(sys.argv[2])]
evals = {r["epoch"]: r for r in lines if r["type"] == "eval"}
ranks = {}
for r in lines:
    if r["type"] == "rank":
        ranks.setdefault(r["epoch"], {})[r["rank"]] = r
assert len(summary["epochs"]) == 4
for e in summary["epochs"]:
    busy, ideal, wall = e["busy"], e["busy_ideal_s"], e["wall_s"]
    assert len(busy) == 2 and all(0 < b <= 1 + 1e-9 for b in busy), e
    samples = [ranks[e["epoch"]][r]["samples"] for r in range(2)]
    want = sum(samples) / sum(n / (b * wall) for n, b in zip(samples, busy))
    assert abs(ideal - want) <= 1e-6 * want and ideal <= wall * (1 + 1e-9), (ideal, want, e)
    ev = evals[e["epoch"]]
    assert ev["busy"] == busy and ev["busy_ideal_s"] == ideal, (ev, e)
print("busy per epoch:", [[round(b, 2) for b in e["busy"]] for e in summary["epochs"]])
PY
