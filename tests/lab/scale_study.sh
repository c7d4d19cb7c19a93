# lab/experiments/scale.py on a tiny cluster (4 ranks, 3 epochs of 5 short steps, a slowdown from
# epoch 2): its option errors, every run (the kill run's daemon dies after epoch 1 and the
# embedded fallback plans the rest), the records it writes and --report printing the tables from
# them (figures are not judged: a study, not a test); and that the committed records' predictions
# are the ones today's replay makes from the committed traces.
source "$(dirname "$0")/../e2e/common.bash"
STUDY=lab/experiments/scale.py
PY=/usr/bin/python3
expect_fail "--runs: 'slow' is not one of" $PY $STUDY --runs dbs,slow
expect_fail "--ranks 5: no spec" $PY $STUDY --ranks 5 --specs "$TMP"
expect_fail "$TMP/none.jsonl: cannot read it" $PY $STUDY --report "$TMP/none.jsonl"
cat >"$TMP/scale-4.json" <<'JSON'
{"epochs": 3, "samples_per_epoch": 200, "global_batch": 40, "params": 100, "base_throughput": 400,
 "step_noise": 0.05, "nodes": [{"speed": 1}, {"speed": 0.75}, {"speed": 0.5}, {"speed": 0.25}],
 "disturbances": [{"rank": 1, "factor": 2, "from": 2}]}
JSON
$PY $STUDY --build "$BUILD" --specs "$TMP" --ranks 4 --kill-ranks 4 --kill-after 1 --scheduler-timeout 2 \
  --runs static,dbs,best-after,kill,collective --out "$TMP/s.jsonl" --logs "$TMP/logs" --traces "$TMP/traces" \
  >"$TMP/out" 2>"$TMP/err" ||
  { cat "$TMP/err"; fail "the study failed"; }
cat "$TMP/out"
[ ! -e "$TMP/s.jsonl.part" ] || fail "the study left its .part file"
$PY - "$TMP/s.jsonl" <<'PY' || fail "the records are wrong"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
assert [r["run"] for r in records] == ["spec", "static", "dbs", "best-after", "kill", "collective"], \
    [r["run"] for r in records]
spec, static, dbs, best, kill, collective = records
for w in ("spin", "sleep"):
    g = collective["allgather"][w]
    assert 0 < g["min_s"] <= g["median_s"] < 10, collective
assert collective["bytes"] == 424 and "--exchange allgather" in collective["command"], collective
near = lambda a, b: all(abs(x - y) <= 1e-5 * y for x, y in zip(a, b)) and len(a) == len(b)
assert near(spec["speeds"]["before"], [400, 300, 200, 100]), spec
assert near(spec["speeds"]["after"], [400, 150, 200, 100]), spec
assert best["policy"] == "fixed:19,7,9,5", best["policy"]  # 40 in proportion to 400:150:200:100
for r in records[1:5]:
    assert len(r["epochs"]) == 3 and r["epochs_done"] == 3, r
    assert r["pace"]["steps"] == 4 * 5 * 3, r["pace"]
    assert all(e["control"]["total_s"] >= 0 for e in r["epochs"]), r
    assert all(0 <= e["control"]["waited_s"] <= e["control"]["total_s"] for e in r["epochs"]), r
assert all(e["batch"] == [10] * 4 for e in static["epochs"])
assert kill["killed_after"] == 1, kill
sources = [e["source"] for e in kill["epochs"][1:]] + [kill["next"]["source"]]
assert sources == ["daemon", "embedded-fallback", "embedded-fallback"], sources
PY
$PY $STUDY --report "$TMP/s.jsonl" >"$TMP/report" || fail "--report failed"
diff "$TMP/out" "$TMP/report" || fail "--report printed other tables than the study"
grep -q "^| 4 | after | " "$TMP/report" || fail "no balance row"
grep -q "^| 4 | kill | 1 of 1 before the kill | 1 | embedded-fallback | " "$TMP/report" || fail "no kill row"
grep -q "^| 4 | [0-9.]* ms | [0-9.]* ms | [0-9.]* ms (embedded) | [0-9.]* |$" "$TMP/report" ||
  fail "no collective row"

# The static and dbs runs' traces are kept, and --replay-only replays them again: the same
# predictions (replay is deterministic), the other figures untouched.
[ -s "$TMP/traces/4-static.jsonl" ] && [ -s "$TMP/traces/4-dbs.jsonl" ] || fail "the traces were not kept"
cp "$TMP/s.jsonl" "$TMP/again.jsonl"
$PY $STUDY --build "$BUILD" --replay-only --out "$TMP/again.jsonl" 2>"$TMP/err" ||
  { cat "$TMP/err"; fail "--replay-only failed"; }
$PY - "$TMP/s.jsonl" "$TMP/again.jsonl" <<'PY' || fail "--replay-only changed the records"
import json, sys
first, again = ([json.loads(l) for l in open(p)] for p in sys.argv[1:])
assert len(first) == len(again)
for a, b in zip(first, again):
    if a["run"] in ("static", "dbs"):
        assert b["replay"].pop("commit"), b
        assert a["replay"] == b["replay"], (a["replay"], b["replay"])
        assert a["replay"]["recorded_total_s"] > 0 and a["replay"]["static_s"] > 0, a
    assert a == b, (a, b)
PY
rm "$TMP/traces/4-dbs.jsonl"
expect_fail "4 ranks, dbs: no trace $TMP/traces/4-dbs.jsonl to replay" \
  $PY $STUDY --build "$BUILD" --replay-only --out "$TMP/again.jsonl"
expect_fail "no static or dbs record to replay" \
  $PY $STUDY --build "$BUILD" --replay-only --out "$TMP/again.jsonl" --ranks 64

# The committed figures are today's replay's: the committed traces (traces/scale/) replayed again
# by this build print the committed tables.
replays_current "$STUDY" docs/results/scale.jsonl
