# kill -9 of the daemon in the middle of a job and a restart on the same state directory: the
# job completes on the daemon's plans and the daemon's trace holds every epoch exactly once.
source "$(dirname "$0")/common.bash"
DAEMON_PID=
trap '[ -n "$DAEMON_PID" ] && kill -9 "$DAEMON_PID" 2>/dev/null; rm -rf "$TMP"' EXIT
EPOCHS=7

start_daemon() {  # start_daemon LISTEN
  rm -f "$TMP/ready.json"
  "$SCHED" serve --listen "$1" --state-dir "$TMP/state" --ready-file "$TMP/ready.json" \
    >>"$TMP/daemon.log" 2>&1 &
  DAEMON_PID=$!
  for _ in $(seq 200); do [ -s "$TMP/ready.json" ] && return 0; sleep 0.05; done
  fail "daemon not ready: $(cat "$TMP/daemon.log")"
}

start_daemon 127.0.0.1:0
listen=$(json_get "$TMP/ready.json" "d['listen']")
"${MPIRUN[@]}" -np 2 "$AGENT" --model lenet --epochs $EPOCHS --train-limit 2000 --test-limit 300 \
  --threads 1 --no-progress --scheduler "$listen" --job restart-job --scheduler-timeout 30 \
  --disturb rank=1,factor=2 --trace "$TMP/agents.jsonl" >"$TMP/out" 2>&1 &
JOB_PID=$!

# Kill the daemon once it has planned epoch 3, while the job runs on.
trace=$TMP/state/traces/restart-job.jsonl
for _ in $(seq 1200); do
  grep -q '"epoch":3,.*"type":"plan"\|"type":"plan".*"epoch":3,' "$trace" 2>/dev/null && break
  sleep 0.05
done
grep -q '"source":"daemon"' "$trace" || fail "the daemon planned nothing before the kill"
kill -9 "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null || true
kill -0 "$JOB_PID" 2>/dev/null || fail "the job ended before the daemon was killed"
echo "killed the daemon after $(grep -c '"type":"plan"' "$trace") plan records"
start_daemon "$listen"  # same state directory, same port

wait "$JOB_PID" || { cat "$TMP/out" "$TMP/daemon.log"; fail "job failed"; }
cat "$TMP/out"
grep -q "restored at epoch" "$TMP/daemon.log" || fail "the daemon did not restore the job"

python3 - "$TMP/agents.jsonl" "$trace" "$EPOCHS" <<'PY' || { cat "$TMP/daemon.log"; fail "trace check"; }
import collections, json, sys
agents = [r for r in map(json.loads, open(sys.argv[1]))]
daemon = [r for r in map(json.loads, open(sys.argv[2]))]
epochs = int(sys.argv[3])
plans = collections.Counter(r["epoch"] for r in daemon if r["type"] == "plan")
ranks = collections.Counter(r["epoch"] for r in daemon if r["type"] == "rank")
assert plans == {e: 1 for e in range(1, epochs + 2)}, plans        # every plan once
assert ranks == {e: 2 for e in range(1, epochs + 1)}, ranks        # every epoch's reports once
agent_plans = [r for r in agents if r["type"] == "plan"]
daemon_plans = [r for r in daemon if r["type"] == "plan"]
assert [p["source"] for p in agent_plans[1:]] == ["daemon"] * epochs, [p["source"] for p in agent_plans]
assert agent_plans == daemon_plans
print("daemon trace: plans", dict(plans), "rank records", dict(ranks))
PY
kill -TERM "$DAEMON_PID"
wait "$DAEMON_PID" || fail "daemon exited with $? after SIGTERM"
DAEMON_PID=
echo "restart ok"
