# A short single-process run learns, prints one line per epoch, and writes the summary (with the
# documented keys) and a weights file.
source "$(dirname "$0")/common.bash"
"$AGENT" --model lenet --epochs 2 --train-limit 3000 --test-limit 1000 --threads 2 \
  --summary "$TMP/summary.json" --save-weights "$TMP/w.bin" --trace "$TMP/trace.jsonl" >"$TMP/out" 2>"$TMP/err"
cat "$TMP/out"
[ "$(grep -cE '^ +[0-9]+ +[0-9.]+ ' "$TMP/out")" -eq 2 ] || fail "expected 2 epoch lines"
grep -q "2 TBB thread" "$TMP/err" || fail "agent did not log its thread count: $(cat "$TMP/err")"
json_get "$TMP/summary.json" "len(d['epochs'])" | grep -qx 2 || fail "summary has no 2 epochs"
for k in epoch wall_s images_per_s train_loss test_loss test_acc; do
  json_get "$TMP/summary.json" "d['epochs'][1]['$k']" >/dev/null || fail "summary epoch lacks $k"
done
for k in test_acc test_loss param_l2 param_sum; do
  json_get "$TMP/summary.json" "d['$k']" >/dev/null || fail "summary lacks $k"
done
acc=$(json_get "$TMP/summary.json" "d['test_acc']")
python3 -c "import sys; sys.exit(0 if float('$acc') > 0.6 else 1)" || fail "test accuracy $acc <= 0.6"
[ -s "$TMP/w.bin" ] || fail "no weights file"
head -n 1 "$TMP/trace.jsonl" | grep -q '"format":"dbs-trace"' || fail "trace header missing"
echo "accuracy $acc"
