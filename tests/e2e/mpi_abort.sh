# An exception on one rank ends the whole job with a non-zero status within seconds: rank 0
# fails to write its checkpoint (the folder passes the checks at start, but its checkpoint.bin
# is a folder) while rank 1 waits in the next epoch's allreduce.
source "$(dirname "$0")/common.bash"
mkdir -p "$TMP/ckpt/checkpoint.bin"
start=$SECONDS
rc=0
timeout 60 "${MPIRUN[@]}" -np 2 "$AGENT" --model lenet --epochs 3 --train-limit 600 --test-limit 100 \
  --threads 1 --no-progress --checkpoint "$TMP/ckpt" >"$TMP/out" 2>&1 || rc=$?
took=$((SECONDS - start))
cat "$TMP/out" | tail -n 5
[ "$rc" -ne 0 ] || fail "job exited 0"
[ "$rc" -ne 124 ] || fail "job hung until the timeout"
grep -q "rank 0" "$TMP/out" || fail "the error does not name the rank"
grep -q "ckpt/checkpoint.bin" "$TMP/out" || fail "the error does not name the path"
echo "job ended with status $rc after ${took}s"
[ "$took" -le 20 ] || fail "took ${took}s"
