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

# The sharded update's checkpoint holds the whole optimizer state: a 2-rank sharded run's
# checkpoint resumes on 3 ranks (sharded) to the end a replicated run's does (3-rank sums differ
# in order between the two: within the plan-invariance tolerance).
static=(--model lenet --batch 128 --train-limit 1500 --test-limit 300 --seed 5 --no-progress
        --threads 1 --policy static)
for update in replicated sharded; do
  "${MPIRUN[@]}" -np 2 "$AGENT" "${static[@]}" --update "$update" --epochs 1 \
    --checkpoint "$TMP/ck-$update" >/dev/null 2>&1 || fail "$update: first part on 2 ranks"
  "${MPIRUN[@]}" -np 3 "$AGENT" "${static[@]}" --update "$update" --epochs 3 \
    --checkpoint "$TMP/ck-$update" --resume --save-weights "$TMP/w3-$update.bin" >"$TMP/out" 2>&1 ||
    { cat "$TMP/out"; fail "$update: resume on 3 ranks"; }
done
read -r diff scale < <(weights_compare "$TMP/w3-replicated.bin" "$TMP/w3-sharded.bin")
echo "2 -> 3 ranks, sharded vs replicated: max abs difference $diff, max abs parameter $scale"
python3 -c "import sys; sys.exit(0 if $diff <= 1e-4 * $scale else 1)" ||
  fail "sharded resume on 3 ranks differs by $diff"
