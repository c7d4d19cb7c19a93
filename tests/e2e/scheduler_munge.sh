# Users prove who they are with munge (dbs-scheduler serve --auth token,munge): a munged started
# here on a private socket and key; uid 1001 runs an agent with no token and its job is planned
# by the daemon; uid 1002 is refused from uid 1001's job (code auth, the daemon's log names uid
# 1002 and the job); a credential for another rank, a replayed one, an expired one and a forged
# one are refused; anonymous HTTP viewers see counts only, the admin (bearer token) every job and
# its owner; a restart keeps the owner; while munged hangs or is gone, registers are refused
# after 1 s or at once, the daemon serves meanwhile, and registers are taken once munged is back. Skips without root, setpriv, munged or a munge build.
source "$(dirname "$0")/common.bash"
DAEMON_PID=
# munged forks into the background: tests/munged.py stops the one of its pid file, also when the
# test stops before it read it. TERM and INT (meson's timeout, ^C) exit through the EXIT trap.
cleanup() {
  [ -n "$DAEMON_PID" ] && kill -9 "$DAEMON_PID" 2>/dev/null
  python3 tests/munged.py stop "$TMP/munge"
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

[ "$(id -u)" -eq 0 ] || { echo "skipped: needs root to act as two uids (setpriv)"; exit 77; }
for c in setpriv munged munge; do
  command -v "$c" >/dev/null || { echo "skipped: $c missing (apt-get install munge util-linux)"; exit 77; }
done
# The daemon checks --auth before it binds: a bad address shows whether munge is built. (The
# output is captured first: under pipefail the daemon's exit 2 would fail a pipe into grep.)
out=$("$SCHED" serve --auth munge --listen 127.0.0.1:no-port 2>&1 || true)
if grep -q "munge is not built" <<<"$out"; then
  echo "skipped: dbs built without libmunge (-Dmunge)"; exit 77
fi

# munged on a private socket and key (tests/munged.py).
M=$TMP/munge
chmod 755 "$TMP"  # the users reach the socket
python3 tests/munged.py start "$M" >/dev/null || fail "tests/munged.py could not start munged"
SOCK=$M/munge.socket.2

A=1001
B=1002
as() { local uid=$1; shift; setpriv --reuid="$uid" --regid="$uid" --clear-groups "$@"; }
# cred UID JOB RANK [munge args]: a credential of uid for rank RANK of JOB.
cred() { as "$1" munge -S "$SOCK" -s "dbs-register v2 job=$2 rank=$3" "${@:4}"; }
# register JOB RANK WORLD AUTH: the daemon's first answer to a register presenting AUTH.
register() {
  python3 - "$LISTEN" "$@" <<'PY'
import json, socket, sys
host, port = sys.argv[1].rsplit(":", 1)
job, rank, world, auth = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
msg = {"v": 2, "type": "register", "job": job, "rank": rank, "world": world, "host": "h",
       "config": {"policy": "dbs", "global_batch": 64, "samples_per_epoch": 640,
                                      "min_batch": 1, "max_batch": 0, "min_gain": 0.02,
                                      "rebalance_every": 0}}
if auth:
    msg["auth"] = auth
s = socket.create_connection((host, int(port)), timeout=10)
s.sendall((json.dumps(msg) + "\n").encode())
print(s.makefile().readline().strip())
PY
}
# expect_refused WANT JOB RANK AUTH: the register is refused with code auth and WANT.
expect_refused() {
  refused_with "$1" "$(register "$2" "$3" 2 "$4")"
}
# refused_with WANT ANSWER: the answer is a refusal with code auth and WANT.
refused_with() {
  grep -qF '"code":"auth"' <<<"$2" && grep -qF -- "$1" <<<"$2" ||
    fail "expected an auth refusal with '$1', got: $2"
  echo "ok: refused: $1"
}

start_daemon --auth token,munge --munge-socket "$SOCK" --state-dir "$TMP/state"
grep -q "token or munge credential required" "$TMP/daemon.log" || fail "daemon does not say its auth"

# uid 1001 trains a job with no token anywhere: its agent authenticates with munge.
mkdir -m 777 "$TMP/alice"
as $A env -u DBS_TOKEN_FILE HOME="$TMP/alice" MUNGE_SOCKET="$SOCK" "$AGENT" --model lenet --epochs 2 \
  --train-limit 600 --test-limit 100 --threads 1 --no-progress --job alice-job \
  --scheduler "$LISTEN" --scheduler-timeout 30 --trace "$TMP/alice/trace.jsonl" \
  >"$TMP/alice.out" 2>&1 || { cat "$TMP/alice.out" "$TMP/daemon.log"; fail "uid 1001's agent failed"; }
grep -q "connected to the daemon" "$TMP/alice.out" || fail "uid 1001's agent did not connect"
if grep -q "embedded policy\|refused" "$TMP/alice.out"; then cat "$TMP/alice.out"; fail "uid 1001's job fell back"; fi
python3 - "$TMP/alice/trace.jsonl" <<'PY' || fail "uid 1001's plans are not the daemon's"
import json, sys
plans = [r for r in map(json.loads, open(sys.argv[1])) if r["type"] == "plan"]
assert [p["source"] for p in plans] == ["initial", "daemon", "daemon"], plans
PY
grep -q "job 'alice-job' created: .*created with uid $A" "$TMP/daemon.log" || fail "no creation by uid $A in the log"

# A running job of uid 1001 (2 ranks, rank 0 registered): uid 1002 is refused from it.
out=$(register shared 0 2 "munge:$(cred $A shared 0)")
grep -q '"type":"plan"' <<<"$out" || fail "uid $A cannot create job 'shared': $out"
expect_refused "job 'shared' belongs to another user, not uid $B" shared 1 "munge:$(cred $B shared 1)"
grep -q "rejected .*(auth): job 'shared' belongs to another user, not uid $B" "$TMP/daemon.log" ||
  fail "the daemon's log does not name uid $B and the job"
# A credential is bound to its job and rank, and opens one register only.
expect_refused "munge credential of uid $A is not for rank 1 of job 'shared'" shared 1 "munge:$(cred $A shared 0)"
expect_refused "is not for rank 1 of job 'shared'" shared 1 "munge:$(cred $A other-job 1)"
c=$(cred $A shared 1)
out=$(register shared 1 2 "munge:$c")
grep -q '"type":"plan"' <<<"$out" || fail "uid $A cannot join its job: $out"
expect_refused "munge credential of uid $A replayed" shared 1 "munge:$c"
c=$(cred $A shared 1 -t 1)
sleep 3
expect_refused "munge credential of uid $A expired" shared 1 "munge:$c"
# A credential of another munge key (another cluster) or none at all.
expect_refused "invalid munge credential" shared 1 "munge:MUNGE:AwQFAAAnotacredential="
expect_refused "missing token or munge credential" shared 1 ""

# Anonymous HTTP viewers (loopback is not trusted when users are told apart) see counts only;
# the admin, with the token as bearer, sees every job and its owner.
curl -sf "http://$HTTP/status" >"$TMP/anon.json" || fail "no /status"
if grep -q "alice-job\|shared" "$TMP/anon.json"; then fail "anonymous /status shows jobs: $(cat "$TMP/anon.json")"; fi
curl -sf "http://$HTTP/metrics" | grep -q 'job_id="shared"' && fail "anonymous /metrics shows jobs"
curl -sf -H "Authorization: Bearer $(cat "$TMP/token")" "http://$HTTP/status" >"$TMP/admin.json" || fail "no /status"
json_get "$TMP/admin.json" "sorted((j['job'], j.get('owner')) for j in d['jobs'])" |
  grep -qxF "[('alice-job', $A), ('shared', $A)]" || fail "the admin does not see both jobs: $(cat "$TMP/admin.json")"

# The owner is journalled: after a restart uid 1002 is still refused, uid 1001 still joins.
kill -TERM "$DAEMON_PID"
for _ in $(seq 100); do kill -0 "$DAEMON_PID" 2>/dev/null || break; sleep 0.05; done
start_daemon --auth munge --munge-socket "$SOCK" --state-dir "$TMP/state"
expect_refused "job 'shared' belongs to another user, not uid $B" shared 1 "munge:$(cred $B shared 1)"
out=$(register shared 1 2 "munge:$(cred $A shared 1)")
grep -q '"type":"plan"' <<<"$out" || fail "uid $A cannot join its job after a restart: $out"
# --auth munge alone takes no token, not even the admin's.
expect_refused "missing munge credential" shared 1 ""
grep -qF "$(cat "$TMP/token")" "$TMP/daemon.log" && fail "the token appears in the log"

# munged hangs (SIGSTOP): the register that meets it is refused after 1 s, naming munged, and the
# next ones at once while that call waits (libmunge would hold each 10 s); the credential is
# decoded off the daemon's loop, so HTTP is answered while the first one waits. munged goes on
# (SIGCONT): a register is taken again.
pid=$(cat "$M/munged.pid")
creds=()
for j in $(seq 0 13); do creds+=("$(cred $A "gone-$j" 0)"); done
kill -STOP "$pid"
register gone-0 0 2 "munge:${creds[0]}" >"$TMP/first.out" &
first=$!
sleep 0.3
start=$(date +%s%N)
curl -sf -m 5 "http://$HTTP/status" >/dev/null || fail "no /status while munged hangs"
ms=$((($(date +%s%N) - start) / 1000000))
kill -0 "$first" 2>/dev/null || fail "the first register was answered before /status: $(cat "$TMP/first.out")"
[ "$ms" -lt 500 ] || fail "/status took $ms ms while a register waited for munged: the daemon's loop waits too"
echo "ok: /status answered in $ms ms while a register waited for munged"
wait "$first" || fail "the first register's client failed"
refused_with "munge: munged at $SOCK does not answer (nothing within 1 s): cannot decode" \
  "$(cat "$TMP/first.out")"
start=$(date +%s%N)
for j in 1 2; do
  expect_refused "munge: munged at $SOCK does not answer (a call has waited" "gone-$j" 0 "munge:${creds[$j]}"
done
ms=$((($(date +%s%N) - start) / 1000000))
[ "$ms" -lt 2000 ] || fail "2 registers took $ms ms while munged hung"
kill -CONT "$pid"
taken() {
  for _ in $(seq 40); do
    out=$(register "$1" 0 1 "munge:$(cred $A "$1" 0)")
    grep -q '"type":"plan"' <<<"$out" && return 0
    sleep 0.5
  done
  fail "no register taken once munged is back: $out"
}
taken back-1

# munged dies and leaves its socket behind (SIGKILL): the register that meets it is refused after
# 1 s (libmunge retries a refused connect for 2.25 s); once that call ended, the next ones are
# refused at once, connect refused; munged started again, a register is taken.
kill -9 "$pid"
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
[ -S "$SOCK" ] || fail "munged's socket went with it: the test needs it left behind"
expect_refused "munge: munged at $SOCK does not answer (nothing within 1 s)" gone-3 0 "munge:${creds[3]}"
for j in $(seq 4 13); do  # the call that met it ends 2.25 s after it started
  out=$(register "gone-$j" 0 2 "munge:${creds[$j]}")
  grep -qF "munged at $SOCK does not answer (Connection refused): cannot decode" <<<"$out" && break
  grep -qF "munged at $SOCK does not answer (a call has waited" <<<"$out" || fail "unexpected: $out"
  [ "$j" -lt 13 ] || fail "still no refused connect: $out"
  sleep 0.5
done
echo "ok: refused: connect refused"
python3 tests/munged.py start "$M" >/dev/null || fail "munged did not start again"
taken back-2
echo "scheduler munge ok"
