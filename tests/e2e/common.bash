# Helpers for the end-to-end tests (tests/e2e) and the lab's (tests/lab): each test is a bash
# script that exits 0 (pass), 77 (skip) or anything else (fail), run from the repository root.
set -euo pipefail
BUILD=${DBS_BUILD:-$PWD/build}
AGENT=$BUILD/agents/dbs-agent
BENCH=$BUILD/bench/dbs-bench
LAB=$BUILD/lab/dbs-lab
SCHED=$BUILD/scheduler/dbs-scheduler
TRUST=(--http-trust-loopback)
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
# need_package PKG COMMAND: installs Debian package PKG when COMMAND is missing (agents/setup.sh),
# or skips the test (exit 77) saying why.
need_package() {
  command -v "$2" >/dev/null && return 0
  # shellcheck source=../../agents/setup.sh
  source "$(dirname "${BASH_SOURCE[0]}")/../../agents/setup.sh"
  dbs_install_missing "$1" >&2 || true
  command -v "$2" >/dev/null || { echo "skipped: $2 missing and package $1 could not be installed"; exit 77; }
}
# replays_current STUDY RECORDS: the committed RECORDS (a study's results, its traces committed)
# are today's replay's: STUDY --replay-only with $BUILD on a copy of them gives the same tables
# (STUDY --report) as they do; else fails naming the commands that bring them up to date.
replays_current() {
  local study=$1 records=$2
  cp "$records" "$TMP/committed.jsonl"
  /usr/bin/python3 "$study" --replay-only --build "$BUILD" --out "$TMP/committed.jsonl" \
    >/dev/null 2>"$TMP/err" || { cat "$TMP/err"; fail "--replay-only of $records failed"; }
  /usr/bin/python3 "$study" --report "$TMP/committed.jsonl" >"$TMP/today" || fail "--report failed"
  /usr/bin/python3 "$study" --report "$records" >"$TMP/recorded" || fail "--report of $records failed"
  diff "$TMP/recorded" "$TMP/today" ||
    fail "$records holds predictions today's replay no longer makes: run $study --replay-only," \
      "then bench/tables.py --write"
}
# free_port: a TCP port on 127.0.0.1 free at the moment of asking (tests/ports.py).
free_port() { python3 "$(dirname "${BASH_SOURCE[0]}")/../ports.py"; }
# start_daemon ARGS...: dbs-scheduler serve on loopback ports of its choosing with HTTP, the
# options in TRUST (default: --http-trust-loopback, so that the tests read job ids without the
# token), a token ($TMP/token) and ARGS; sets DAEMON_PID, LISTEN and HTTP (ADDR:PORT) once it is ready. The
# caller's EXIT trap kills $DAEMON_PID.
start_daemon() {
  [ -f "$TMP/token" ] || { head -c 32 /dev/urandom | base64 >"$TMP/token"; chmod 600 "$TMP/token"; }
  rm -f "$TMP/ready.json"
  "$SCHED" serve --listen 127.0.0.1:0 --http 127.0.0.1:0 "${TRUST[@]}" --token-file "$TMP/token" \
    --ready-file "$TMP/ready.json" "$@" >>"$TMP/daemon.log" 2>&1 &
  DAEMON_PID=$!
  disown "$DAEMON_PID"  # killed by the trap without a job report
  for _ in $(seq 200); do [ -s "$TMP/ready.json" ] && break; sleep 0.05; done
  [ -s "$TMP/ready.json" ] || fail "daemon not ready: $(cat "$TMP/daemon.log")"
  LISTEN=$(json_get "$TMP/ready.json" "d['listen']")
  HTTP=$(json_get "$TMP/ready.json" "d['http']")
}
# run_job JOB EPOCHS [AGENT ARGS...]: a 2-rank lenet job of EPOCHS epochs on small data through
# the daemon at $LISTEN, holding the job's key; its output in $TMP/JOB.out.
run_job() {
  local job=$1 epochs=$2
  shift 2
  (umask 077 && "$SCHED" job-key --token-file "$TMP/token" "$job" >"$TMP/$job.key")
  DBS_SCHEDULER=$LISTEN DBS_TOKEN_FILE=$TMP/$job.key "${MPIRUN[@]}" -x DBS_SCHEDULER -x DBS_TOKEN_FILE \
    -np 2 "$AGENT" --model lenet --epochs "$epochs" --train-limit 1000 --test-limit 200 --threads 1 \
    --no-progress --job "$job" --scheduler-timeout 30 "$@" >"$TMP/$job.out" 2>&1
}
# make_tls DIR [SAN]: a throwaway CA (DIR/ca.pem, DIR/ca.key) and a server certificate signed by
# it (DIR/server.pem, DIR/server.key) for SAN (default DNS:localhost,IP:127.0.0.1), made by
# tests/tls_certs.py.
make_tls() {
  need_package openssl openssl
  python3 "$(dirname "${BASH_SOURCE[0]}")/../tls_certs.py" "$@" >/dev/null ||
    fail "tests/tls_certs.py could not make the test certificates in $1"
}
