# A resumed 2-rank run ends with exactly the parameters of an uninterrupted one.
source "$(dirname "$0")/common.bash"
common=(--model lenet --batch 128 --train-limit 1500 --test-limit 300 --seed 5 --no-progress
        --threads 1 --policy fixed:40,88)
"${MPIRUN[@]}" -np 2 "$AGENT" "${common[@]}" --epochs 3 --save-weights "$TMP/straight.bin" >/dev/null 2>&1 ||
  fail "uninterrupted run"
"${MPIRUN[@]}" -np 2 "$AGENT" "${common[@]}" --epochs 1 --checkpoint "$TMP/ckpt" >/dev/null 2>&1 ||
  fail "first part"
"${MPIRUN[@]}" -np 2 "$AGENT" "${common[@]}" --epochs 3 --checkpoint "$TMP/ckpt" --resume \
  --save-weights "$TMP/resumed.bin" --summary "$TMP/summary.json" >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "resume"; }
grep -qE '^ +2 ' "$TMP/out" || fail "resumed run did not start at epoch 2: $(cat "$TMP/out")"
grep -qE '^ +1 ' "$TMP/out" && fail "resumed run repeated epoch 1"
json_get "$TMP/summary.json" "len(d['epochs'])" | grep -qx 3 || fail "summary should hold all 3 epochs"
cmp "$TMP/straight.bin" "$TMP/resumed.bin" || fail "resumed parameters differ"
echo "resumed run is bit-identical"
