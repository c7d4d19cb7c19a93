# One trace format, three recorders: the same small 2-rank job (an emulated cluster, rank 1 at a
# third of rank 0's speed) traced by the agents, traced by a local daemon (--state-dir DIR:
# DIR/traces/JOB.jsonl), and a synthetic trace of the same spec from `replay --synthesize`.
# `dbs-scheduler replay` reads each; the daemon's trace holds the very plans the agents ran, and
# replaying the agent trace and the daemon trace of that run reproduces the recorded plans in
# every epoch.
source "$(dirname "$0")/common.bash"
DAEMON_PID=
trap '[ -n "$DAEMON_PID" ] && kill -9 "$DAEMON_PID" 2>/dev/null; rm -rf "$TMP"' EXIT
# The job is emulated (sleeping waits of the spec's cost), so that the recorded speeds are the
# spec's whatever else loads the machine: a rank that does real work measures the other tests
# that share its cores, and a plan made from such an epoch is one replay need not reproduce.
# Steps of 64-192 ms keep wake-ups late by a few ms small against them. A gain of at least 20% to
# re-plan: the first re-plan gains about 50%, later ones a few percent. Replay fits its cost model
# on the whole trace, so a later re-plan at the gate's edge could go either way in the agents and
# in replay; 20% keeps every decision away from that edge, and the plans are then the trace's to
# reproduce.
cat >"$TMP/spec.json" <<'JSON'
{"epochs": 3, "samples_per_epoch": 1280, "global_batch": 128, "speeds": [1, 0.3333333],
 "base_throughput": 1000}
JSON
JOB=(--model synthetic --cluster "$TMP/spec.json" --no-progress --min-gain 0.2)

# 1. The agents' own trace, planned by the embedded policy.
"${MPIRUN[@]}" -np 2 "$AGENT" "${JOB[@]}" --trace "$TMP/agent.jsonl" >"$TMP/agent.out" 2>&1 ||
  { cat "$TMP/agent.out"; fail "agent run failed"; }

# 2. The same job planned by a daemon on loopback, which writes its own trace.
head -c 32 /dev/urandom | base64 >"$TMP/token" && chmod 600 "$TMP/token"
"$SCHED" serve --listen 127.0.0.1:0 --token-file "$TMP/token" --state-dir "$TMP/state" \
  --ready-file "$TMP/ready.json" >"$TMP/daemon.log" 2>&1 &
DAEMON_PID=$!
for _ in $(seq 200); do [ -s "$TMP/ready.json" ] && break; sleep 0.05; done
[ -s "$TMP/ready.json" ] || fail "daemon not ready: $(cat "$TMP/daemon.log")"
listen=$(json_get "$TMP/ready.json" "d['listen']")
# The agents present the job's key, not the daemon token.
(umask 077 && "$SCHED" job-key --token-file "$TMP/token" three >"$TMP/three.key")
"${MPIRUN[@]}" -np 2 "$AGENT" "${JOB[@]}" --scheduler "$listen" --token-file "$TMP/three.key" \
  --job three --scheduler-timeout 30 --trace "$TMP/agents-with-daemon.jsonl" \
  >"$TMP/daemon-job.out" 2>&1 || { cat "$TMP/daemon-job.out" "$TMP/daemon.log"; fail "daemon job failed"; }
if grep -q "embedded policy" "$TMP/daemon-job.out"; then fail "an epoch fell back to the embedded policy"; fi
kill -TERM "$DAEMON_PID" && wait "$DAEMON_PID" || fail "daemon did not stop cleanly"
DAEMON_PID=
DAEMON_TRACE=$TMP/state/traces/three.jsonl

# 3. A synthetic trace of the same spec.
"$SCHED" replay --synthesize "$TMP/spec.json" -o "$TMP/synthetic.jsonl" 2>/dev/null ||
  fail "synthesize failed"

# replay reads all three, in the same format version.
for t in agent.jsonl agents-with-daemon.jsonl synthetic.jsonl; do
  "$SCHED" replay "$TMP/$t" --json >"$TMP/$t.replay.json" 2>"$TMP/$t.replay.err" ||
    fail "replay $t: $(cat "$TMP/$t.replay.err")"
done
"$SCHED" replay "$DAEMON_TRACE" --json >"$TMP/daemon.replay.json" 2>"$TMP/daemon.replay.err" ||
  fail "replay of the daemon's trace: $(cat "$TMP/daemon.replay.err")"
[ -s "$TMP/daemon.replay.err" ] && fail "replay of the daemon's trace warned: $(cat "$TMP/daemon.replay.err")"

python3 - "$TMP" "$DAEMON_TRACE" <<'PY' || fail "three traces"
import json, sys
tmp, daemon_trace = sys.argv[1], sys.argv[2]
def records(path):
    return [json.loads(l) for l in open(path)]
def plans(path):
    return [(r["epoch"], r["step"], r["batch"], r["offset"], r["reason"])
            for r in records(path) if r["type"] == "plan"]
traces = {"agent": f"{tmp}/agent.jsonl", "agents-with-daemon": f"{tmp}/agents-with-daemon.jsonl",
          "daemon": daemon_trace, "synthetic": f"{tmp}/synthetic.jsonl"}
for name, path in traces.items():
    head = records(path)[0]
    assert head["type"] == "header" and head["format"] == "dbs-trace", (name, head)
    assert head["version"] == 2, (name, head["version"])
    c = head["config"]
    for k in ("policy", "global_batch", "samples_per_epoch", "min_batch", "max_batch",
              "min_gain", "rebalance_every", "world"):
        assert k in c, (name, k)
    assert c["world"] == 2 and c["global_batch"] == 128 and c["samples_per_epoch"] == 1280, (name, c)
    kinds = {r["type"] for r in records(path)}
    assert {"plan", "rank", "eval"} <= kinds, (name, kinds)
# The daemon recorded exactly the plans the agents ran.
a, d = plans(traces["agents-with-daemon"]), plans(traces["daemon"])
assert len(a) == len(d) == 4 and a == d, (a, d)
print("daemon trace plans == agents' plans:", [(p[0], p[2]) for p in d])
# Replay read 3 epochs of each and, for the recorded runs, made the recorded plans every epoch.
for name in ("agent.jsonl", "agents-with-daemon.jsonl", "synthetic.jsonl", "daemon"):
    path = f"{tmp}/{name}.replay.json"
    s = json.load(open(path))["dbs"]
    assert len(s["epochs"]) == 3, (name, s)
    assert s["plans_matched"] == 3, (name, s["plans_matched"])
    print(f"replay {name}: 3 epochs, recorded plans reproduced in {s['plans_matched']} of 3")
PY
grep -q "planned by the daemon\|connected to the daemon" "$TMP/daemon-job.out" || fail "agents did not use the daemon"
echo "three traces ok"
