# lab/experiments/replay_accuracy.py at tiny sizes: its option errors, one static-then-dbs pair
# per workload this machine can run (the quota workload where CPU cgroups are writable, pytorch
# besides where train.py writes traces), the records (each run's trace replayed under both policies),
# the table, --replay-only and --report (figures are not judged: a study, not a test); and that
# the committed records' predictions are the ones today's replay makes from their traces.
source "$(dirname "$0")/../e2e/common.bash"
STUDY=lab/experiments/replay_accuracy.py
PY=/usr/bin/python3

expect_fail "--workloads: 'hog' is not one of sleep, quota, pytorch" $PY $STUDY --workloads sleep,hog
expect_fail "--pairs and --epochs must be at least 1" $PY $STUDY --pairs 0
expect_fail "no /nonexistent/agents/dbs-agent" $PY $STUDY --build /nonexistent --workloads sleep \
  --out "$TMP/x.jsonl" --traces "$TMP/x"
[ ! -e "$TMP/x.jsonl" ] || fail "a refused study wrote its --out"
expect_fail "$TMP/none.jsonl: cannot read it" $PY $STUDY --report "$TMP/none.jsonl"

workloads=sleep
CG=/sys/fs/cgroup/cpu
if [ "$(id -u)" = 0 ] && [ -w "$CG/cgroup.procs" ] && [ -e "$CG/cpu.cfs_quota_us" ]; then
  workloads+=,quota
else
  echo "skip: the quota workload needs root and cgroup v1's cpu controller at $CG (not here)"
fi
if [[ $workloads == *quota* ]] && $PY -c 'import torch' 2>/dev/null && [ -d "$BUILD/python/dbs/torch" ] &&
  PYTHONPATH=$BUILD/python $PY examples/pytorch/train.py --help 2>/dev/null | grep -q -- --trace; then
  workloads+=,pytorch
  export PET_MONITOR_INTERVAL=0.2  # torchrun looks at its ranks every 0.2 s, not 5 s
else
  echo "skip: the pytorch workload needs torch, $BUILD/python and train.py --trace"
fi
tiny=(--pairs 1 --epochs 2 --batch 64 --train-limit 256 --test-limit 64)
$PY $STUDY --build "$BUILD" --out "$TMP/r.jsonl" --traces "$TMP/traces" --workloads "$workloads" \
  "${tiny[@]}" >"$TMP/table" 2>"$TMP/err" || { cat "$TMP/err"; fail "replay_accuracy.py failed"; }
[ ! -e "$TMP/r.jsonl.part" ] || fail "the .part file was left"
ls "$CG"/dbs-replay-* >/dev/null 2>&1 && fail "a cgroup was left: $(ls -d "$CG"/dbs-replay-*)"

$PY - "$TMP/r.jsonl" "$workloads" <<'PY' || fail "the records are wrong"
import json, os, sys
records = [json.loads(l) for l in open(sys.argv[1])]
want = [(w, p) for w in sys.argv[2].split(",") for p in ("static", "dbs")]
assert [(r["workload"], r["policy"]) for r in records] == want, records
for r in records:
    assert os.path.getsize(r["trace"]) > 0, r
    assert r["predicted_other_s"] > 0 and r["recorded_total_s"] > 0, r
    # each trace under its own policy; a run of about 1 s under a quota is a dozen 100 ms CFS
    # periods, so at this size one period more or less is 8%, and a loaded machine adds one
    assert abs(r["own_error"]) < (0.18 if r["workload"] != "sleep" else 0.05), r
    assert "--policy " + r["policy"] in r["command"], r["command"]
    w = r["where"]
    assert abs(sum(w.values()) - r["predicted_other_s"]) < 1e-6 * r["predicted_other_s"], w
    assert r["load_before"] >= 0, r
PY
grep -q "| CNN, rank 1 slowed ×3 (sleep) | static → dbs | 1 |" "$TMP/table" ||
  fail "no sleep row: $(cat "$TMP/table")"
grep -q "| CNN, rank 1 slowed ×3 (sleep) | dbs → static | 1 |" "$TMP/table" ||
  fail "no reverse row: $(cat "$TMP/table")"
grep -qE "^[0-9]+ of [0-9]+ predictions meet both targets" "$TMP/table" ||
  fail "no verdict: $(cat "$TMP/table")"
$PY $STUDY --report "$TMP/r.jsonl" >"$TMP/again" || fail "--report failed"
diff "$TMP/table" "$TMP/again" || fail "--report prints another table"
$PY $STUDY --replay-only --build "$BUILD" --out "$TMP/r.jsonl" >"$TMP/replayed" ||
  fail "--replay-only failed"
diff "$TMP/table" "$TMP/replayed" || fail "--replay-only with the same build changed the table"

# The committed figures are today's replay's: the committed traces replayed again by this build
# print the committed tables (a change to replay that moves a prediction fails here until the
# records are replayed again).
replays_current "$STUDY" docs/results/replay.jsonl
echo "replay_accuracy.py checks passed"
