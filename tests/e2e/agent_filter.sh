# dbs-agent filter under mpirun (2 ranks): from the weights of a short run, the kept indices, a
# random control with the same removals per class, and the HTML report; then training on the
# subset (the trace records its hash, every rank trains on the same samples), and the errors for
# a missing, corrupt, out-of-range, wrong-version or wrong-data subset file.
source "$(dirname "$0")/common.bash"
N=1500
"$AGENT" --model lenet --epochs 1 --train-limit $N --test-limit 500 --threads 1 --no-progress \
  --save-weights "$TMP/w.bin" >/dev/null 2>"$TMP/err" || fail "training: $(cat "$TMP/err")"
"${MPIRUN[@]}" -np 2 "$AGENT" filter --weights "$TMP/w.bin" --model lenet --train-limit $N \
  --threads 1 --iterations 300 --perplexity 20 --out "$TMP/kept.json" \
  --random-control "$TMP/random.json" --report "$TMP/report.html" >"$TMP/out" 2>"$TMP/err" ||
  fail "filter: $(cat "$TMP/out" "$TMP/err")"
cat "$TMP/out"
grep -q "features of samples \[0, 750)" "$TMP/err" || fail "rank 0 did not compute its half: $(cat "$TMP/err")"
grep -q "features of samples \[750, 1500)" "$TMP/err" || fail "rank 1 did not compute its half"
json_get "$TMP/kept.json" "d['format'] == 'dbs-subset' and d['version'] == 1 and d['dataset_samples'] == $N" |
  grep -qx True || fail "kept.json header"
kept=$(json_get "$TMP/kept.json" "d['count']")
python3 - "$TMP/kept.json" "$TMP/random.json" <<'PY' || fail "kept/random subsets inconsistent"
import json, sys
k, r = (json.load(open(p)) for p in sys.argv[1:])
assert k["count"] == len(k["indices"]) == r["count"] == len(r["indices"]), "counts differ"
assert 0 < k["count"] < k["dataset_samples"], "nothing or everything removed"
assert k["indices"] == sorted(set(k["indices"])) and r["indices"] == sorted(set(r["indices"]))
assert k["indices"] != r["indices"], "the random control equals the filter"
assert k["dataset_hash"] == r["dataset_hash"] and r["method"] == "random-control"
PY
grep -q "<svg" "$TMP/report.html" || fail "report has no chart"
grep -q "Removed per class" "$TMP/report.html" || fail "report has no table"
if grep -qE "<script|src=\"http" "$TMP/report.html"; then fail "report is not self-contained"; fi

# Training on the subset: the header shows its size, the trace records its hash.
"${MPIRUN[@]}" -np 2 "$AGENT" --model lenet --epochs 1 --train-limit $N --test-limit 200 --threads 1 \
  --no-progress --train-subset "$TMP/kept.json" --trace "$TMP/trace.jsonl" >"$TMP/out" 2>"$TMP/err" ||
  fail "subset training: $(cat "$TMP/err")"
grep -q "$kept train" "$TMP/out" || fail "run header does not show $kept training samples: $(cat "$TMP/out")"
python3 - "$TMP/trace.jsonl" "$kept" <<'PY' || fail "trace lacks the subset"
import json, sys
h = json.loads(open(sys.argv[1]).readline())
s = h["config"]["train_subset"]
assert s["count"] == int(sys.argv[2]) and len(s["hash"]) == 16 and s["method"] == "dbscan", s
assert h["config"]["samples_per_epoch"] == int(sys.argv[2])
PY

# Bad subset files: each error names the file and the field.
run() { "$AGENT" --model lenet --epochs 1 --train-limit $N --test-limit 100 --threads 1 --no-progress --train-subset "$@"; }
expect_fail "$TMP/none.json: cannot open" run "$TMP/none.json"
echo '{"format": "dbs-subset", "version": 1,' >"$TMP/corrupt.json"
expect_fail "$TMP/corrupt.json: not valid JSON" run "$TMP/corrupt.json"
python3 - "$TMP" <<'PY'
import json, sys
d = json.load(open(sys.argv[1] + "/kept.json"))
def put(name, **kw):
    json.dump(dict(d, **kw), open(sys.argv[1] + "/" + name, "w"))
put("version.json", version=2)
put("range.json", indices=d["indices"][:-1] + [5000])
put("count.json", count=d["count"] + 1)
put("hash.json", dataset_hash="0123456789abcdef")
put("order.json", indices=[3, 2] + d["indices"][2:])
PY
expect_fail "version.json: field 'version' is 2" run "$TMP/version.json"
expect_fail "range.json: field 'indices' item $((kept - 1)) must be an integer in [0, $((N - 1))], got 5000" run "$TMP/range.json"
expect_fail "count.json: field 'count'" run "$TMP/count.json"
expect_fail "hash.json: field 'dataset_hash'" run "$TMP/hash.json"
expect_fail "order.json: field 'indices' item 1 is 2, not above the previous one" run "$TMP/order.json"
"$AGENT" --model lenet --epochs 1 --train-limit 1000 --test-limit 100 --threads 1 --no-progress \
  --train-subset "$TMP/kept.json" >"$TMP/out" 2>&1 && fail "a subset for $N samples was accepted for 1000"
grep -q "field 'dataset_samples' is $N but the training set has 1000 samples" "$TMP/out" ||
  fail "wrong-size error: $(cat "$TMP/out")"
expect_fail "weights file" "$AGENT" filter --weights "$TMP/missing.bin" --model lenet --train-limit 100
# A checkpoint of a run on the kept samples does not resume on the random control (the same
# number of samples, others): the subset's hash is part of the checkpoint's identity.
run "$TMP/kept.json" --checkpoint "$TMP/ck" >/dev/null 2>&1 || fail "subset run with a checkpoint failed"
expect_fail "checkpoint is of another run" run "$TMP/random.json" --checkpoint "$TMP/ck" --resume --epochs 2
run "$TMP/kept.json" --checkpoint "$TMP/ck" --resume --epochs 2 >"$TMP/out" 2>&1 ||
  fail "resume on the same subset failed: $(cat "$TMP/out")"
echo "filter e2e ok: kept $kept of $N"
