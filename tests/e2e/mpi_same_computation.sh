# Same computation, any plan (real MPI): one epoch of cnn on 2,048 samples, dropout on, gives the
# same parameters (max abs difference <= 1e-4 x max abs parameter) for one process with batch
# 128 and for 2 ranks with fixed:64,64 and fixed:100,28, and for the sharded update
# (--update sharded: reduce-scatter, each rank updates its slice, allgather) under 100,28 with
# either allreduce, whose summation order differs from the replicated update's, and for the
# exchange overlapped with the backward pass (--overlap: buckets of layers, non-blocking).
source "$(dirname "$0")/common.bash"
common=(--model cnn --epochs 1 --batch 128 --train-limit 2048 --test-limit 256 --seed 7 --no-progress)
"$AGENT" "${common[@]}" --threads 2 --save-weights "$TMP/single.bin" >/dev/null 2>&1 || fail "single run"
for run in 64,64 100,28 100,28/sharded/mpi 100,28/sharded/ring 100,28/replicated/mpi/overlap; do
  IFS=/ read -r plan update allreduce overlap <<<"$run"
  name=${run//\//-}
  "${MPIRUN[@]}" -np 2 "$AGENT" "${common[@]}" --threads 1 --policy "fixed:$plan" \
    --update "${update:-replicated}" --allreduce "${allreduce:-mpi}" ${overlap:+--overlap} \
    --save-weights "$TMP/$name.bin" --summary "$TMP/$name.json" >/dev/null 2>"$TMP/err" ||
    { cat "$TMP/err"; fail "mpirun $run"; }
  python3 -c "import json, sys; c = json.load(open(sys.argv[1]))['config']
sys.exit(0 if (c['update'], c['allreduce'], c['overlap']) == (sys.argv[2], sys.argv[3], sys.argv[4] == 'overlap') else 1)" \
    "$TMP/$name.json" "${update:-replicated}" "${allreduce:-mpi}" "${overlap:-}" || fail "$run: the summary's config is not $run"
  read -r diff scale < <(weights_compare "$TMP/single.bin" "$TMP/$name.bin")
  echo "fixed:$run: max abs difference $diff, max abs parameter $scale"
  python3 -c "import sys; sys.exit(0 if $diff <= 1e-4 * $scale else 1)" || fail "fixed:$run differs by $diff"
done
