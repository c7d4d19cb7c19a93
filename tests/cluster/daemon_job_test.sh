#!/usr/bin/env bash
# Cluster test 2: dbs.sbatch through the daemon on the head node, reached over the bridge (not
# loopback) with a token. kill -9 of the daemon mid-job and a restart on the same state folder:
# the job finishes and every epoch is in the daemon's trace exactly once.
source "$(dirname "$0")/lib/test.bash"
test_cluster_up
EPOCHS=5
state=$DIR/daemon
token=$DIR/daemon-token
(umask 077 && head -c 32 /dev/urandom | base64 >"$token")
DAEMON_PID=
stop_daemon() { [ -n "$DAEMON_PID" ] && kill -9 "$DAEMON_PID" 2>/dev/null; DAEMON_PID=; }
trap 'stop_daemon; test_cluster_down' EXIT

start_daemon() {  # start_daemon LISTEN
  rm -f "$DIR/ready.json"
  "$SCHED" serve --listen "$1" --token-file "$token" --state-dir "$state" \
    --ready-file "$DIR/ready.json" >>"$DIR/daemon.log" 2>&1 &
  DAEMON_PID=$!
  for _ in $(seq 200); do [ -s "$DIR/ready.json" ] && return 0; sleep 0.05; done
  fail "daemon not ready: $(cat "$DIR/daemon.log")"
}
start_daemon "$CLUSTER_HEAD:0"
listen=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["listen"])' "$DIR/ready.json")
case $listen in "$CLUSTER_HEAD":*) ;; *) fail "daemon listens on $listen, not on the bridge" ;; esac

log=$DIR/job.log
DBS_SCHEDULER=$listen DBS_TOKEN_FILE=$token DBS_OUT=$DIR/local/out sbatch --quiet -N 3 -o "$log" \
  "$SBATCH_SCRIPT" "${SMALL[@]}" --epochs $EPOCHS --scheduler-timeout 60 >/dev/null
job=$(job_id_of_last)
trace=$state/traces/slurm-$job.jsonl
for _ in $(seq 1500); do
  grep -q '"type":"plan".*"epoch":3,\|"epoch":3,.*"type":"plan"' "$trace" 2>/dev/null && break
  sleep 0.1
done
grep -q '"source":"daemon"' "$trace" 2>/dev/null || { cat "$log" "$DIR/daemon.log"; fail "the daemon planned nothing"; }
stop_daemon
[ -n "$(squeue -h -j "$job" -o %i)" ] || fail "the job ended before the daemon was killed"
echo "killed the daemon after $(grep -c '"type":"plan"' "$trace") plan records"
start_daemon "$listen"
wait_job "$job" || true  # its exit code is checked by what it printed, below
cat "$log"
grep -q "^final: test accuracy" "$log" || { cat "$DIR/daemon.log"; fail "the job did not finish"; }
grep -q "restored at epoch" "$DIR/daemon.log" || fail "the daemon did not restore the job"
python3 - "$trace" "$EPOCHS" <<'PY' || { cat "$DIR/daemon.log"; fail "daemon trace check"; }
import collections, json, sys
daemon = [json.loads(l) for l in open(sys.argv[1])]
epochs = int(sys.argv[2])
plans = collections.Counter(r["epoch"] for r in daemon if r["type"] == "plan")
ranks = collections.Counter(r["epoch"] for r in daemon if r["type"] == "rank")
assert plans == {e: 1 for e in range(1, epochs + 2)}, plans
assert ranks == {e: 3 for e in range(1, epochs + 1)}, ranks
hosts = sorted({r["host"] for r in daemon if r["type"] == "rank"})
assert hosts == ["node1", "node2", "node3"], hosts
print("daemon trace: plans", dict(plans), "rank records", dict(ranks), "hosts", hosts)
PY
echo "daemon job ok"
