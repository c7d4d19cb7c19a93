# Same computation, any plan (real MPI): one epoch of cnn on 2,048 samples, dropout on, gives the
# same parameters (max abs difference <= 1e-4 x max abs parameter) for one process with batch
# 128 and for 2 ranks with fixed:64,64 and fixed:100,28.
source "$(dirname "$0")/common.bash"
common=(--model cnn --epochs 1 --batch 128 --train-limit 2048 --test-limit 256 --seed 7 --no-progress)
"$AGENT" "${common[@]}" --threads 2 --save-weights "$TMP/single.bin" >/dev/null 2>&1 || fail "single run"
for plan in 64,64 100,28; do
  "${MPIRUN[@]}" -np 2 "$AGENT" "${common[@]}" --threads 1 --policy "fixed:$plan" \
    --save-weights "$TMP/$plan.bin" >/dev/null 2>"$TMP/err" || { cat "$TMP/err"; fail "mpirun fixed:$plan"; }
  read -r diff scale < <(weights_compare "$TMP/single.bin" "$TMP/$plan.bin")
  echo "fixed:$plan: max abs difference $diff, max abs parameter $scale"
  python3 -c "import sys; sys.exit(0 if $diff <= 1e-4 * $scale else 1)" || fail "fixed:$plan differs by $diff"
done
