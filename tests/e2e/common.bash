# Helpers for the end-to-end tests: each test is a bash script that exits 0 (pass), 77 (skip)
# or anything else (fail), run by tests/run.sh from the repository root.
set -euo pipefail
BUILD=${DBS_BUILD:-$PWD/build}
AGENT=$BUILD/agents/dbs-agent
BENCH=$BUILD/bench/dbs-bench
SCHED=$BUILD/scheduler/dbs-scheduler
MPIRUN=(mpirun ${DBS_MPIRUN_ARGS:---allow-run-as-root --oversubscribe --bind-to none})
TMP=$(mktemp -d /tmp/dbs-e2e.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
# expect_fail "substring" cmd...: the command must exit non-zero and print the substring.
expect_fail() {
  local want=$1
  shift
  local out rc=0
  out=$("$@" 2>&1) || rc=$?
  [ "$rc" -ne 0 ] || fail "expected failure of: $* (got exit 0)"
  grep -qF -- "$want" <<<"$out" || fail "expected '$want' in the output of: $*; got: $out"
  echo "ok: '$want' (exit $rc)"
}
# json_get FILE EXPR: evaluates a Python expression over the JSON document `d`.
json_get() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }
# weights_compare A B: prints "max_abs_diff max_abs_param" of two dbs weights files.
weights_compare() {
  python3 - "$1" "$2" <<'PY'
import struct, sys
def params(path):
    b = open(path, "rb").read()
    assert b[:6] == b"DBSWGT", path
    pos = 12
    n, = struct.unpack_from("<I", b, pos); pos += 4 + n + 12
    layers, = struct.unpack_from("<I", b, pos); pos += 4
    for _ in range(layers):
        n, = struct.unpack_from("<I", b, pos); pos += 4 + n + 8
    total, = struct.unpack_from("<Q", b, pos); pos += 8
    return struct.unpack_from("<%df" % total, b, pos)
a, b = params(sys.argv[1]), params(sys.argv[2])
assert len(a) == len(b)
print(max(abs(x - y) for x, y in zip(a, b)), max(abs(x) for x in a))
PY
}
