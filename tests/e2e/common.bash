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
