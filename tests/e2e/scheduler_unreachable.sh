# The daemon unreachable from the start: the job completes on the embedded policy, and the log
# and the trace (plan source "embedded-fallback") say so.
source "$(dirname "$0")/common.bash"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
start=$SECONDS
"${MPIRUN[@]}" -np 2 "$AGENT" --model lenet --epochs 3 --train-limit 2000 --test-limit 300 \
  --threads 1 --no-progress --scheduler "127.0.0.1:$port" --job nobody-home \
  --trace "$TMP/t.jsonl" >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "job failed"; }
cat "$TMP/out"
[ $((SECONDS - start)) -lt 60 ] || fail "the job waited too long for an absent daemon"
grep -q "epoch 2 uses the embedded policy: daemon at 127.0.0.1:$port unreachable" "$TMP/out" ||
  fail "the log does not say the embedded policy planned epoch 2"
python3 - "$TMP/t.jsonl" <<'PY' || fail "trace check"
import json, sys
plans = [r for r in map(json.loads, open(sys.argv[1])) if r["type"] == "plan"]
assert [p["source"] for p in plans] == ["initial"] + ["embedded-fallback"] * 3, plans
assert all(sum(p["batch"]) == p["global_batch"] for p in plans)
print("sources:", [p["source"] for p in plans])
PY
