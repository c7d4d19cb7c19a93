# Model averaging (--average-every) under real MPI: 2 ranks under fixed:24,8, the first epoch
# synchronous and the second averaging every 4 steps, each rank's own Adam state. SIGINT to rank 1
# in the averaging epoch stops both ranks after the same average (a step that is a multiple of
# 4), with checkpoint and summary; --resume continues there and ends with the weights of the
# uninterrupted run, bit for bit (each rank continues from its own optimizer state). The trace
# and the summary record the averaging period and each epoch's averages.
source "$(dirname "$0")/common.bash"
# 32 steps per epoch; rank 1 sleeps 7x its compute per step so a step lasts some milliseconds.
args=(--model lenet --epochs 2 --train-limit 1024 --test-limit 256 --batch 32 --policy fixed:24,8
  --disturb rank=1,factor=8 --average-every 4 --average-after-epochs 1)

"${MPIRUN[@]}" -np 2 "$AGENT" "${args[@]}" --no-progress --save-weights "$TMP/ref.bin" \
  --summary "$TMP/ref.json" --trace "$TMP/ref.jsonl" >"$TMP/ref.out" 2>&1 ||
  fail "reference run failed: $(cat "$TMP/ref.out")"
grep -q "models averaged every 4 step(s) from epoch 2 (optimizer state local)" "$TMP/ref.out" ||
  fail "no averaging in the run header: $(cat "$TMP/ref.out")"
python3 - "$TMP/ref.json" "$TMP/ref.jsonl" <<'PY' || fail "summary and trace of the averaging run"
import json, sys
summary = json.load(open(sys.argv[1]))
c = summary["config"]
assert (c["average_every"], c["average_after_epochs"], c["average_optimizer"]) == (4, 1, "local"), c
assert c["overlap"] is False, c
e1, e2 = summary["epochs"]
assert "averages" not in e1 and e2["averages"] == 8, (e1, e2)
records = [json.loads(line) for line in open(sys.argv[2])]
header = records[0]["config"]
assert (header["average_every"], header["average_after_epochs"]) == (4, 1), header
evals = [r for r in records if r["type"] == "eval"]
assert [e.get("averages", 0) for e in evals] == [0, 8], evals
print("summary and trace: averaging every 4 steps from epoch 2, 8 averages in epoch 2")
PY

# Interrupted in epoch 2, which averages: the stop waits for the next average.
"${MPIRUN[@]}" -np 2 "$AGENT" "${args[@]}" --progress --checkpoint "$TMP/ck" \
  --summary "$TMP/int.json" >"$TMP/int.out" 2>"$TMP/int.err" &
mp=$!
for _ in $(seq 600); do
  grep -qE 'epoch 2 \[[# ]*\] +[0-9]+% +([3-9]|[12][0-9])/32' "$TMP/int.out" 2>/dev/null && break
  kill -0 "$mp" 2>/dev/null || fail "ended before epoch 2: $(cat "$TMP/int.err")"
  sleep 0.05
done
rank1=
for p in $(pgrep -P "$mp"); do
  tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1" && rank1=$p
done
[ -n "$rank1" ] || fail "no rank 1 under mpirun $mp"
kill -INT "$rank1"
rc=0
wait "$mp" || rc=$?
[ "$rc" -eq 130 ] || fail "SIGINT: mpirun exited $rc, want 130: $(cat "$TMP/int.err")"
read -r epoch step < <(json_get "$TMP/int.json" 'd["stopped"]["epoch"], d["stopped"]["step"]')
[ "$epoch" = 2 ] || fail "stopped in epoch $epoch, want 2 (the signal came in epoch 2)"
[ $((step % 4)) -eq 0 ] && [ "$step" -lt 32 ] || fail "stopped after step $step, not at an average"
echo "SIGINT to rank 1 in epoch 2: both ranks stopped after the average of step $step"

"${MPIRUN[@]}" -np 2 "$AGENT" "${args[@]}" --no-progress --checkpoint "$TMP/ck" --resume \
  --save-weights "$TMP/resumed.bin" >"$TMP/resume.out" 2>"$TMP/resume.err" ||
  fail "resume failed: $(cat "$TMP/resume.err")"
grep -q "resumed from epoch 2, step $((step + 1)) of 32" "$TMP/resume.err" ||
  fail "no resume message: $(cat "$TMP/resume.err")"
read -r diff _ < <(weights_compare "$TMP/resumed.bin" "$TMP/ref.bin")
[ "$diff" = "0.0" ] || fail "resumed weights differ from the uninterrupted run's by $diff"
echo "resumed from step $((step + 1)): final weights equal the uninterrupted run's"
