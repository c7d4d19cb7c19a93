# dbs-agent and dbs-bench answer --help, and reject bad options and bad data with a clear message.
source "$(dirname "$0")/common.bash"
for bin in "$AGENT" "$BENCH"; do
  "$bin" --help >"$TMP/help" || fail "$bin --help exited non-zero"
  grep -q "Example" "$TMP/help" || fail "$bin --help shows no example"
done
grep -q -- "--disturb" <("$AGENT" --help) || fail "agent --help lacks --disturb"
expect_fail "--epochs" "$AGENT" --epochs 0
expect_fail "unknown key 'speed'" "$AGENT" --disturb rank=1,speed=3
expect_fail "factor must be >= 1" "$AGENT" --disturb rank=1,factor=0.5
expect_fail "--optimizer" "$AGENT" --optimizer lbfgs
expect_fail "$TMP/nowhere" "$AGENT" --data "$TMP/nowhere" --epochs 1
expect_fail "--model: resnet not in {cnn,lenet,synthetic}" "$AGENT" --model resnet --epochs 1 --train-limit 10
mkdir -p "$TMP/bad"
printf 'garbage' | gzip >"$TMP/bad/train-images-idx3-ubyte.gz"
for f in train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  cp /usr/share/datasets/fashion-mnist/$f.gz "$TMP/bad/"
done
expect_fail "train-images-idx3-ubyte.gz" "$AGENT" --data "$TMP/bad" --epochs 1

# A later option overrides an earlier one (wrapper scripts pass defaults first).
"$AGENT" --epochs 3 --model lenet --train-limit 200 --test-limit 100 --no-progress --epochs 1 >"$TMP/out" 2>&1 ||
  fail "repeated option refused: $(cat "$TMP/out")"
[ "$(grep -cE '^ +[0-9]+ +[0-9.]+ ' "$TMP/out")" -eq 1 ] || fail "the last --epochs did not win"
echo "later options override earlier ones"
echo "all CLI checks passed"

# One convention on every binary: --version answers with the version and build, usage errors
# exit 2 with "BINARY: error:", and run-time failures exit 1.
for bin in "$AGENT" "$BENCH" "$SCHED"; do
  name=$(basename "$bin")
  out=$("$bin" --version) || fail "$name --version exited non-zero"
  grep -qE "^$name [0-9]+\.[0-9]+\.[0-9]+ \(git [^;]+; [a-z]+ build, SIMD .+\)$" <<<"$out" ||
    fail "$name --version printed: $out"
  rc=0; out=$("$bin" --no-such-option 2>&1) || rc=$?
  [ "$rc" -eq 2 ] || fail "$name --no-such-option exited $rc, want 2"
  grep -q "^$name: error: " <<<"$out" || fail "$name usage error without the prefix: $out"
done
rc=0; "$AGENT" --epochs 0 >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "dbs-agent --epochs 0 exited $rc, want 2"
rc=0; "$SCHED" replay "$TMP/no-such-trace.jsonl" >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 1 ] || fail "replay of a missing trace exited $rc, want 1 (run-time failure)"
echo "--version and exit codes checked"
