# A 2-rank job through a local dbs-scheduler serve (token, state directory, HTTP): it finishes,
# the daemon's trace and the agents' trace have the same plans, /metrics and /status show the
# job, the page's SVG charts are well-formed XML, and SIGTERM stops the daemon cleanly. Also the
# daemon's refusals at start (a group-readable token file, a non-loopback address without
# token) and the keys of dbs-bench scheduler's JSON.
source "$(dirname "$0")/common.bash"
DAEMON_PID=
trap '[ -n "$DAEMON_PID" ] && kill -9 "$DAEMON_PID" 2>/dev/null; rm -rf "$TMP"' EXIT

head -c 32 /dev/urandom | base64 >"$TMP/token"
chmod 600 "$TMP/token"
cp "$TMP/token" "$TMP/token-shared" && chmod 640 "$TMP/token-shared"
expect_fail "is accessible by group or others (mode 0640)" "$SCHED" serve --token-file "$TMP/token-shared"
expect_fail "is not a loopback address" "$SCHED" serve --listen 0.0.0.0:0
expect_fail "not a loopback address" "$SCHED" serve --listen 127.0.0.1:0 --http 0.0.0.0:0
expect_fail "--lost-after: must be > 0, got 0" "$SCHED" serve --lost-after 0
[ "$("$SCHED" serve --report-timeout -1 2>&1 | wc -c)" -lt 200 ] || fail "a bad number prints a long range"
"$SCHED" serve --help | grep -q "Example" || fail "serve --help shows no example"

"$SCHED" serve --listen 127.0.0.1:0 --http 127.0.0.1:0 --http-trust-loopback --token-file "$TMP/token" \
  --state-dir "$TMP/var/lib/dbs-state" --ready-file "$TMP/ready.json" >"$TMP/daemon.log" 2>&1 &
DAEMON_PID=$!
for _ in $(seq 200); do [ -s "$TMP/ready.json" ] && break; sleep 0.05; done
[ -s "$TMP/ready.json" ] || fail "daemon not ready: $(cat "$TMP/daemon.log")"
listen=$(json_get "$TMP/ready.json" "d['listen']")
# A nested --state-dir is made with its parents (mkdir -p); the directory itself is private.
[ "$(stat -c %a "$TMP/var/lib/dbs-state")" = 700 ] || fail "state directory not created 0700"

http=$(json_get "$TMP/ready.json" "d['http']")

# The address and the job's key come from the environment (DBS_SCHEDULER, DBS_TOKEN_FILE): the
# agents hold the key of e2e-job, not the daemon token.
(umask 077 && "$SCHED" job-key --token-file "$TMP/token" e2e-job >"$TMP/e2e-job.key")
DBS_SCHEDULER=$listen DBS_TOKEN_FILE=$TMP/e2e-job.key "${MPIRUN[@]}" -x DBS_SCHEDULER -x DBS_TOKEN_FILE \
  -np 2 "$AGENT" --model lenet --epochs 3 --train-limit 2000 --test-limit 500 --threads 1 \
  --no-progress --job e2e-job --scheduler-timeout 30 --disturb rank=1,factor=3,from=2 --trace "$TMP/agents.jsonl" \
  >"$TMP/out" 2>&1 || { cat "$TMP/out" "$TMP/daemon.log"; fail "job failed"; }
cat "$TMP/out"
grep -q "connected to the daemon at $listen" "$TMP/out" || fail "agents did not connect"
if grep -q "embedded policy" "$TMP/out"; then fail "an epoch fell back to the embedded policy"; fi

python3 - "$TMP/agents.jsonl" "$TMP/var/lib/dbs-state/traces/e2e-job.jsonl" <<'PY' || fail "plans differ"
import json, sys
def plans(path):
    return [r for r in map(json.loads, open(path)) if r["type"] == "plan"]
agents, daemon = plans(sys.argv[1]), plans(sys.argv[2])
assert len(agents) == len(daemon) == 4, (len(agents), len(daemon))
assert agents == daemon, (agents, daemon)
assert [p["source"] for p in agents] == ["initial", "daemon", "daemon", "daemon"], agents
print("same plans:", [(p["epoch"], p["batch"]) for p in agents])
PY

curl -sf "http://$http/metrics" >"$TMP/metrics" || fail "no /metrics"
# After 3 epochs the job shows epoch 3 (not the plan of an epoch 4 that never ran).
for want in 'dbs_job_ranks{job_id="e2e-job"} 2' 'dbs_job_epoch{job_id="e2e-job"} 3' \
  'dbs_job_reports_total{job_id="e2e-job"} 6' 'dbs_job_state{job_id="e2e-job",state="finished"} 1' \
  'dbs_rank_batch{job_id="e2e-job",rank="1"}' \
  'dbs_rank_throughput_samples_per_second{job_id="e2e-job",rank="0"}' \
  'dbs_job_efficiency_ratio{job_id="e2e-job"}' 'dbs_job_plan_changes_total{job_id="e2e-job"}'; do
  grep -qF "$want" "$TMP/metrics" || fail "/metrics lacks $want"
done
curl -sf "http://$http/status" >"$TMP/status.json" || fail "no /status"
json_get "$TMP/status.json" "[j['state'] for j in d['jobs'] if j['job'] == 'e2e-job']" | grep -qx "\['finished'\]" ||
  fail "/status does not show the finished job: $(cat "$TMP/status.json")"
# Each rank's "waiting" is what its start line said ("waits: spin (auto: no CPU quota)").
python3 - "$TMP/status.json" "$TMP/out" <<'PY' || fail "/status does not say how the ranks wait"
import json, re, sys
job = [j for j in json.load(open(sys.argv[1]))["jobs"] if j["job"] == "e2e-job"][0]
said = sorted(re.findall(r", waits: (.+)$", open(sys.argv[2]).read(), re.M))
shown = sorted(r["waiting"] for r in job["ranks"])
assert len(said) == 2 and shown == said, (shown, said)
print("waiting:", shown)
PY

# The page: well-formed XHTML whose inline SVG charts have one line per rank over the 3 epochs.
curl -sf "http://$http/" >"$TMP/page.html" || fail "no page"
python3 - "$TMP/page.html" <<'PY' || fail "page check"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()        # raises on anything not well-formed
svg = "{http://www.w3.org/2000/svg}"
charts = root.findall(f".//{svg}svg")
assert len(charts) == 2, len(charts)
for chart in charts:
    _, _, width, height = map(float, chart.get("viewBox").split())
    lines = chart.findall(f"{svg}polyline")
    assert len(lines) == 2, len(lines)         # ranks 0 and 1
    for line in lines:
        points = [tuple(map(float, p.split(","))) for p in line.get("points").split()]
        assert len(points) == 6, points       # epochs 1..3, each a horizontal step
        assert all(points[k][1] == points[k + 1][1] for k in range(0, 6, 2)), points
        assert all(0 <= x <= width and 0 <= y <= height for x, y in points), points
    assert chart.find(f"{svg}title") is not None
    assert "epoch" in [t.text for t in chart.iter(f"{svg}text")]   # the x axis title
print("page: 2 charts, 2 ranks x 3 epochs each")
PY

kill -TERM "$DAEMON_PID"
for _ in $(seq 100); do kill -0 "$DAEMON_PID" 2>/dev/null || break; sleep 0.05; done
wait "$DAEMON_PID" || fail "daemon exited with $? after SIGTERM"
DAEMON_PID=
grep -q "stopped" "$TMP/daemon.log" || fail "no clean stop in the log"
grep -qF "$(cat "$TMP/token")" "$TMP/daemon.log" "$TMP/out" && fail "the token appears in a log"
# dbs-bench scheduler prints its documented keys (figures are judged in benchmarks, not here).
"$BENCH" scheduler --agents 32 --world 8 --reports 5 --plan-ranks 1000 >"$TMP/bench.json"
for k in reports_per_s p50_ms p99_ms plan_ms plan_encode_ms; do
  json_get "$TMP/bench.json" "d['$k'] > 0" | grep -qx True || fail "bench scheduler: $k missing or not positive"
done
json_get "$TMP/bench.json" "d['reports']" | grep -qx 160 || fail "bench scheduler: not 32 x 5 reports"
echo "scheduler job ok"
