# An emulated cluster (dbs-agent --model synthetic --cluster SPEC): 16 ranks of four node types
# at 1, 0.75, 0.5 and 0.25 of the fastest (traces/emulate-16.json) train 4 epochs under dbs with
# the real exchange, planner, trace and checkpoint. The plan follows the spec's speeds (the best
# split 64/48/32/16 a rank: each node type's mean batch within 10% of it, each rank's within 25%;
# steps of 0.64-1.6 s, so that wake-ups late by tens of ms on a loaded machine move the measured
# speeds little) and balances the ranks: for the spec's speeds the slowest rank works 4 times as
# long as the fastest under the equal split of epoch 1, within 1.25x under the plans of epochs
# 3-4; measured, the busy fractions of epoch 1 spread 2.5x or more and those of an epoch of 2-4
# within 1.3x (a burst of load on the machine makes one epoch's wake-ups late, not all three). Bad input stops
# every rank before anything is written; a checkpoint of the emulated run resumes; a resume with
# more epochs of the same cluster continues it.
source "$(dirname "$0")/common.bash"
SPEC=traces/emulate-16.json

# Bad input: one clear error on every rank (NP ranks, 2 unless set), exit non-zero within a
# minute, nothing written.
touch "$TMP/file"
bad() {  # [NP=n] bad "message" spec.json [options...]
  local want=$1 spec=$2 out rc=0 np=${NP:-2}
  shift 2
  out=$(timeout 60 "${MPIRUN[@]}" -np "$np" "$AGENT" --model synthetic --cluster "$spec" --no-progress \
    --trace "$TMP/bad/t.jsonl" --summary "$TMP/bad/s.json" "$@" 2>&1) || rc=$?
  [ "$rc" -ne 124 ] || fail "$spec $*: mpirun of $np ranks hung until the timeout: $out"
  [ "$rc" -ne 0 ] || fail "$spec $*: exit 0, want an error"
  local n
  n=$(grep -cF -- "$want" <<<"$out" || true)
  [ "$n" -eq "$np" ] || fail "$spec $*: '$want' printed $n times, want once per rank: $out"
  ! grep -q "\[rank " <<<"$out" || fail "$spec $*: a rank started before the check: $out"
  [ ! -e "$TMP/bad/t.jsonl" ] && [ ! -e "$TMP/bad/s.json" ] || fail "$spec $*: a refused run wrote its output"
  echo "ok: $(head -n 1 <<<"$out")"
}
bad "the spec has 16 rank(s) ('nodes' counts, or 'speeds'), the job 2" "$SPEC"
# Open MPI's mpirun hangs where 32 or more processes end before they start MPI: refused at their
# options, the ranks start MPI first.
NP=32 bad "the spec has 16 rank(s) ('nodes' counts, or 'speeds'), the job 32" "$SPEC"
printf '{"epochs": 1, "nodes": [{"count": 2, "beta_s": -0.01}]}' >"$TMP/negative.json"
bad "$TMP/negative.json: nodes[0]: field 'beta_s' must be a finite number > 0, got -0.01" "$TMP/negative.json"
printf '{"epochs": 1, "nodes": [{"count": 2, "alpha_s": 0.01}]}' >"$TMP/missing.json"
bad "$TMP/missing.json: nodes[0]: give exactly one of 'speed', 'throughput', 'epoch_s' and 'beta_s'" "$TMP/missing.json"
printf '{"epochs": 1, "speeds": [1, 1], "network": [{"ranks": [], "bandwidth": 1e8}]}' >"$TMP/net.json"
bad "$TMP/net.json: network[0]: 'ranks' names no rank" "$TMP/net.json"
printf '{"epochs": 1, "speeds": [1, 1]}' >"$TMP/two.json"
bad "--trace $TMP/file/t.jsonl: cannot create folder $TMP/file" "$TMP/two.json" --trace "$TMP/file/t.jsonl"
bad "--epochs 3 contradicts the cluster spec $TMP/two.json, whose 'epochs' is 1 (give one)" "$TMP/two.json" --epochs 3
bad "--data does not go with --model synthetic" "$TMP/two.json" --data /usr/share/datasets/fashion-mnist
bad "--model synthetic needs --cluster SPEC" ""
[ ! -e "$TMP/bad" ] || [ -z "$(ls -A "$TMP/bad")" ] || fail "refused runs wrote into $TMP/bad: $(ls "$TMP/bad")"

# The 16-rank run.
"${MPIRUN[@]}" -np 16 "$AGENT" --model synthetic --cluster "$SPEC" --no-progress \
  --trace "$TMP/t.jsonl" --summary "$TMP/s.json" >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "16-rank run"; }
grep -v "info:" "$TMP/out"
grep -qE "^emulation: 320 steps on 16 ranks; asked [0-9.]+ s, took [0-9.]+ s" "$TMP/out" ||
  fail "no emulation line for 4 epochs x 5 steps x 16 ranks"
# Nothing is evaluated: the epoch lines show "-" for the losses and the accuracy.
[ "$(grep -cE '^ +[1-4] +[0-9.]+ +[0-9.]+ +[0-9.]+% +[0-9]+ +- +- +-  ' "$TMP/out")" = 4 ] ||
  fail "the epoch lines do not show '-' for the missing losses and accuracy"
python3 - "$TMP/t.jsonl" "$TMP/s.json" "$SPEC" <<'PY' || fail "trace check"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
summary = json.load(open(sys.argv[2]))
spec = json.load(open(sys.argv[3]))
config = lines[0]["config"]
assert config["model"] == "synthetic" and config["world"] == 16 and config["params"] == 10000, config
assert config["synthetic"] == spec and config["global_batch"] == 640, config
assert config["samples_per_epoch"] == 3200 and config["wait"] == "sleep", config
kind = lambda t: [r for r in lines if r["type"] == t]
evals, plans, ranks = kind("eval"), kind("plan"), kind("rank")
assert len(evals) == 4 and len(ranks) == 64, (len(evals), len(ranks))
for e in evals:  # nothing evaluated; the control plane timed
    assert "train_loss" not in e and "test_acc" not in e, e
    c = e["control"]
    assert all(c[k] >= 0 for k in ("reports_s", "plan_s")) and c["daemon_s"] == 0, c
    assert 0 <= c["waited_s"] <= c["reports_s"], ("the wait for the last rank is in reports_s", c)
    assert "check_s" not in c, ("the check travels with the reports", c)
assert [e.get("control") for e in summary["epochs"]] == [e["control"] for e in evals]
best = [64] * 4 + [48] * 4 + [32] * 4 + [16] * 4
for p in plans:
    assert sum(p["batch"]) == 640, p
# The plan of epoch 4 (made from epoch 3) against the spec's best split.
last = [p for p in plans if p["epoch"] == 4][-1]["batch"]
for t in range(4):
    mean = sum(last[4 * t:4 * t + 4]) / 4
    assert abs(mean - best[4 * t]) <= 0.10 * best[4 * t], ("node type", t, last)
assert all(abs(b - w) <= 0.25 * w for b, w in zip(last, best)), last
# Each rank's compute in epoch 1 (5 steps of 40 samples) is at least the spec's cost.
speed = [100] * 4 + [75] * 4 + [50] * 4 + [25] * 4
for r in ranks:
    if r["epoch"] == 1:
        assert r["compute_s"] >= 5 * 40 / speed[r["rank"]], r
# Balance for the spec's speeds (what load cannot move): the plans of epochs 3 and 4 (made from
# two measured epochs or more: a burst of load can mislead the first) within 1.25x of even work,
# the equal split 4x.
work = lambda b: max(x / v for x, v in zip(b, speed)) / min(x / v for x, v in zip(b, speed))
planned = {p["epoch"]: work(p["batch"]) for p in plans}
assert planned[1] >= 3.9 and all(planned[e] <= 1.25 for e in (3, 4)), ("plans", planned)
# Balance as measured: the busy fractions (a burst of load on the machine moves one epoch's).
busy = {e["epoch"]: e["busy"] for e in evals}
spread = {e: max(b) / min(b) for e, b in busy.items()}
assert spread[1] >= 2.5, ("the equal split should leave the fast ranks idle", spread)
assert min(spread[2], spread[3], spread[4]) <= 1.3, ("the plans do not balance the ranks", spread)
print("plan of epoch 4:", last, "work max/min per plan:", {e: round(s, 2) for e, s in planned.items()},
      "busy max/min per epoch:", {e: round(s, 2) for e, s in spread.items()})
PY

# Checkpoint and resume: 2 epochs of a 2-rank cluster, then the same cluster with 3 epochs.
printf '{"epochs": 2, "samples_per_epoch": 400, "global_batch": 40, "params": 100, "speeds": [1, 0.5]}' >"$TMP/c2.json"
printf '{"epochs": 3, "samples_per_epoch": 400, "global_batch": 40, "params": 100, "speeds": [1, 0.5]}' >"$TMP/c3.json"
"${MPIRUN[@]}" -np 2 "$AGENT" --model synthetic --cluster "$TMP/c2.json" --no-progress \
  --checkpoint "$TMP/ckpt" >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "first part"; }
"${MPIRUN[@]}" -np 2 "$AGENT" --model synthetic --cluster "$TMP/c3.json" --no-progress \
  --checkpoint "$TMP/ckpt" --resume --summary "$TMP/r.json" >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "resume"; }
grep -qE '^ +3 ' "$TMP/out" && ! grep -qE '^ +[12] ' "$TMP/out" || fail "the resumed run did not train epoch 3 alone: $(cat "$TMP/out")"
json_get "$TMP/r.json" "len(d['epochs'])" | grep -qx 3 || fail "the summary should hold all 3 epochs"
printf '{"epochs": 3, "samples_per_epoch": 400, "global_batch": 40, "params": 100, "speeds": [1, 0.25]}' >"$TMP/other.json"
expect_fail "checkpoint is of another run" "${MPIRUN[@]}" -np 2 "$AGENT" --model synthetic \
  --cluster "$TMP/other.json" --no-progress --checkpoint "$TMP/ckpt" --resume
