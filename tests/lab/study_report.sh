# dbs-lab study record | report on a tiny fixture: 4 one-process lenet jobs of 2 epochs on 256
# samples (batch 64; batch 128 with linear scaling and 1 warmup epoch; seeds 1 and 2) are
# recorded, and the report's tables and page are checked; a filtering file made from the same
# records checks the other study's tables and charts; bad records and mismatched arguments are
# refused naming the file, line and field.
source "$(dirname "$0")/../e2e/common.bash"
jobs=(
  "b64-s1 --batch 64 --seed 1"
  "b64-s2 --batch 64 --seed 2"
  "b128-s1 --batch 128 --lr-scaling linear --warmup-epochs 1 --seed 1"
  "b128-s2 --batch 128 --lr-scaling linear --warmup-epochs 1 --seed 2"
)
for j in "${jobs[@]}"; do
  read -r name args <<<"$j"
  # shellcheck disable=SC2086
  args=(--model lenet --threads 1 --epochs 2 --train-limit 256 --test-limit 100 --base-batch 64 $args)
  "$AGENT" --no-progress "${args[@]}" --summary "$TMP/$name.json" --metrics "$TMP/$name.jsonl" \
    >"$TMP/$name.log" 2>&1 || { cat "$TMP/$name.log"; fail "job $name"; }
  "$LAB" study record --study recipe --summary "$TMP/$name.json" --metrics "$TMP/$name.jsonl" \
    --wall-s 1.5 --out "$TMP/recipe.jsonl" -- "${args[@]}"
done
[ "$(wc -l <"$TMP/recipe.jsonl")" -eq 4 ] || fail "expected 4 records"
"$LAB" study report --in "$TMP/recipe.jsonl" --html "$TMP/recipe.html" >"$TMP/recipe.md"
cat "$TMP/recipe.md"
python3 - "$TMP/recipe.jsonl" "$TMP/recipe.md" "$TMP/recipe.html" <<'PY' || fail "recipe report"
import json, sys, xml.etree.ElementTree as ET
recs = [json.loads(l) for l in open(sys.argv[1])]
r = recs[2]
assert r["global_batch"] == 128 and r["lr_scaling"] == "linear" and r["warmup_epochs"] == 1, r
# warmup from lr 0.001 at epoch 1's start to 0.002 (linear x 128/64) from epoch 2
assert [e["lr"] for e in r["epochs"]] == [0.001, 0.002], r["epochs"]
assert r["final_test_acc"] == r["epochs"][-1]["test_acc"] and r["wall_s"] == 1.5, r
md = open(sys.argv[2]).read().splitlines()
rows = {l.split("|")[1].strip(): l for l in md if l.startswith("| batch")}
assert set(rows) == {"batch 64", "batch 128, linear, warmup 1"}, rows
pct = lambda x: "%.2f" % (100 * x)
for label, (a, b) in [("batch 64", recs[:2]), ("batch 128, linear, warmup 1", recs[2:])]:
    cells = [c.strip() for c in rows[label].split("|")]
    assert cells[3] == "1, 2", cells                       # seeds
    assert cells[4] == pct(a["final_test_acc"]) + " / " + pct(b["final_test_acc"]), cells
assert any(l.startswith("| 1 |") for l in md), "no warmup row in the pivot at batch 128"
svg = "{http://www.w3.org/2000/svg}"
charts = ET.parse(sys.argv[3]).getroot().findall(".//" + svg + "svg")
assert len(charts) == 2, len(charts)
# accuracy: one line per configuration and the seeds' range shaded; lr: one line each
assert [len(c.findall(".//" + svg + "polyline")) for c in charts] == [2, 2]
assert [len(c.findall(".//" + svg + "polygon")) for c in charts] == [2, 0]
PY
# The filtering study's tables and charts, from the same runs relabelled (a report fixture).
python3 - "$TMP/recipe.jsonl" "$TMP/filtering.jsonl" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
with open(sys.argv[2], "w") as f:
    for k, data in enumerate(["full", "filtered", "random"]):
        for r in (recs[0], recs[2]):
            r = dict(r, study="filtering", data=data, final_test_acc=0.1 * (k + 1))
            f.write(json.dumps(r) + "\n")
PY
"$LAB" study report --in "$TMP/filtering.jsonl" --html "$TMP/filtering.html" >"$TMP/filtering.md"
cat "$TMP/filtering.md"
grep -qF "| filtered, batch 64 | 0.001 | 1 | 20.00 | 20.00 | 2 |" "$TMP/filtering.md" || fail "filtering row"
grep -qF "| filtered − random (points) | -10.00 | -10.00 |" "$TMP/filtering.md" || fail "filtering pivot"
python3 - "$TMP/filtering.html" <<'PY' || fail "filtering page"
import sys, xml.etree.ElementTree as ET
svg = "{http://www.w3.org/2000/svg}"
charts = ET.parse(sys.argv[1]).getroot().findall(".//" + svg + "svg")
# final accuracy against batch (3 data sets), then accuracy against epoch per batch (3 each)
assert [len(c.findall(".//" + svg + "polyline")) for c in charts] == [3, 3, 3], len(charts)
assert len(charts[0].findall(".//" + svg + "circle")) == 6
PY

# Bad records: the file, the line and the field.
head -n 2 "$TMP/recipe.jsonl" >"$TMP/bad.jsonl"
echo '{"format": "dbs-study-run", ' >>"$TMP/bad.jsonl"
expect_fail "bad.jsonl:3: not JSON" "$LAB" study report --in "$TMP/bad.jsonl"
sed '2s/"test_acc":[0-9.e-]*/"test_acc":1.5/' "$TMP/recipe.jsonl" >"$TMP/bad2.jsonl"
expect_fail "bad2.jsonl:2: epochs[0]: field 'test_acc' must be a finite number in [0, 1], got 1.5" \
  "$LAB" study report --in "$TMP/bad2.jsonl"
sed '1s/"version":1/"version":7/' "$TMP/recipe.jsonl" >"$TMP/bad3.jsonl"
expect_fail "bad3.jsonl:1: field 'version' must be 1" "$LAB" study report --in "$TMP/bad3.jsonl"
sed '3s/"seed":1/"seed":2/' "$TMP/recipe.jsonl" >"$TMP/bad4.jsonl"
expect_fail "two runs of 'batch 128, linear, warmup 1' with seed 2" \
  "$LAB" study report --in "$TMP/bad4.jsonl"
expect_fail "nothing.jsonl: cannot open" "$LAB" study report --in "$TMP/nothing.jsonl"
# A record whose arguments are not the job's: the lr the metrics recorded disagrees.
expect_fail "epoch 2 started at lr 0.002, but the schedule of the arguments gives 0.001" \
  "$LAB" study record --study recipe --summary "$TMP/b128-s1.json" --metrics "$TMP/b128-s1.jsonl" \
  --wall-s 1 --out "$TMP/x.jsonl" -- --batch 128 --base-batch 64
expect_fail "data 'filtered' but the run had no --train-subset" \
  "$LAB" study record --study filtering --data filtered --summary "$TMP/b64-s1.json" \
  --metrics "$TMP/b64-s1.jsonl" --wall-s 1 --out "$TMP/x.jsonl" -- --batch 64
[ ! -e "$TMP/x.jsonl" ] || fail "a refused record was written"
echo "study report ok"
