# Every rank of a job started with the daemon token itself (the admin's credential, not the
# job's key) joins the job: all ranks are planned by the daemon, none falls back to its embedded
# policy. The daemon token opens every job; a job key only its own.
source "$(dirname "$0")/common.bash"
DAEMON_PID=
trap '[ -n "$DAEMON_PID" ] && kill -9 "$DAEMON_PID" 2>/dev/null; rm -rf "$TMP"' EXIT

start_daemon
DBS_SCHEDULER=$LISTEN DBS_TOKEN_FILE=$TMP/token "${MPIRUN[@]}" -x DBS_SCHEDULER -x DBS_TOKEN_FILE \
  -np 2 "$AGENT" --model lenet --epochs 3 --train-limit 1000 --test-limit 200 --threads 1 \
  --no-progress --job admin-job --scheduler-timeout 30 --trace "$TMP/agents.jsonl" \
  >"$TMP/out" 2>&1 || { cat "$TMP/out" "$TMP/daemon.log"; fail "job failed"; }
cat "$TMP/out"
grep -q "connected to the daemon at $LISTEN" "$TMP/out" || fail "the agents did not connect"
if grep -q "refused\|embedded policy" "$TMP/out"; then fail "a rank was refused or fell back"; fi
python3 - "$TMP/agents.jsonl" <<'PY' || fail "the plans are not all the daemon's"
import json, sys
plans = [r for r in map(json.loads, open(sys.argv[1])) if r["type"] == "plan"]
assert [p["source"] for p in plans] == ["initial", "daemon", "daemon", "daemon"], plans
PY
if grep -q "rejected" "$TMP/daemon.log"; then cat "$TMP/daemon.log"; fail "the daemon rejected a rank"; fi
echo "token ranks ok"
