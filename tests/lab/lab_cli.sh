# dbs-lab answers --help with its subcommands and an example, and keeps the convention of every
# binary: --version with the version and build, usage errors exit 2 with "dbs-lab: error:".
source "$(dirname "$0")/../e2e/common.bash"
"$LAB" --help >"$TMP/help" || fail "dbs-lab --help exited non-zero"
grep -q "Example" "$TMP/help" || fail "dbs-lab --help shows no example"
for sub in balance sweep study; do
  grep -qw "$sub" "$TMP/help" || fail "dbs-lab --help does not list $sub"
  "$LAB" "$sub" --help >"$TMP/sub" || fail "dbs-lab $sub --help exited non-zero"
  grep -q "Example" "$TMP/sub" || fail "dbs-lab $sub --help shows no example"
done
out=$("$LAB" --version) || fail "dbs-lab --version exited non-zero"
grep -qE "^dbs-lab [0-9]+\.[0-9]+\.[0-9]+ \(git [^;]+; [a-z]+ build, SIMD .+\)$" <<<"$out" ||
  fail "dbs-lab --version printed: $out"
rc=0; out=$("$LAB" --no-such-option 2>&1) || rc=$?
[ "$rc" -eq 2 ] || fail "dbs-lab --no-such-option exited $rc, want 2"
grep -q "^dbs-lab: error: " <<<"$out" || fail "dbs-lab usage error without the prefix: $out"
# The studies are not the product's: the installed dbs-bench does not have them.
if [ -x "$BENCH" ]; then
  for sub in balance sweep study; do
    expect_fail "dbs-bench: error: " "$BENCH" "$sub"
  done
fi
echo "dbs-lab CLI ok"
