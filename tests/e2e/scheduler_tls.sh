# TLS on the agents' port, with a throwaway CA made here: a 2-rank job planned by a TLS daemon
# (the trace's plans come from the daemon); a wrong CA and a wrong host name each give one
# warning line naming the certificate's fault, and the job finishes on the embedded policy; a
# plain client on the TLS port is told so in clear text, a TLS client on a plain port fails at
# once, half a handshake and garbage are cut off, and the daemon serves on. At start, a missing
# or mismatched certificate or key is one error naming the file, and a non-zero exit.
source "$(dirname "$0")/common.bash"
DAEMON_PID= PLAIN_PID=
trap '[ -n "$DAEMON_PID" ] && kill -9 "$DAEMON_PID" 2>/dev/null
      [ -n "$PLAIN_PID" ] && kill -9 "$PLAIN_PID" 2>/dev/null; rm -rf "$TMP"' EXIT
make_tls "$TMP/tls"
make_tls "$TMP/other"  # another CA, and a certificate it signed
C=$TMP/tls

# Refusals at start.
expect_fail "--tls-cert $TMP/nope.pem: cannot read the file" \
  "$SCHED" serve --listen 127.0.0.1:0 --tls-cert "$TMP/nope.pem" --tls-key "$C/server.key"
expect_fail "--tls-key $TMP/other/server.key does not match the certificate" \
  "$SCHED" serve --listen 127.0.0.1:0 --tls-cert "$C/server.pem" --tls-key "$TMP/other/server.key"
expect_fail "--tls-cert $C/server.key: not a PEM certificate" \
  "$SCHED" serve --listen 127.0.0.1:0 --tls-cert "$C/server.key" --tls-key "$C/server.key"
expect_fail "--tls-cert needs --tls-key" "$SCHED" serve --listen 127.0.0.1:0 --tls-cert "$C/server.pem"
expect_fail "--tls-ca $TMP/nope.pem: cannot read the file" \
  "$AGENT" --model lenet --epochs 1 --train-limit 100 --test-limit 50 --threads 1 --no-progress \
  --scheduler 127.0.0.1:1 --job x --tls-ca "$TMP/nope.pem"

start_daemon --tls-cert "$C/server.pem" --tls-key "$C/server.key" --hello-timeout 3
grep -q "over TLS" "$TMP/daemon.log" || fail "the daemon does not say it speaks TLS"

# A job over TLS, by IP address and by host name: the daemon plans every epoch.
for scheduler in "$LISTEN" "localhost:${LISTEN##*:}"; do
  job=tls-${scheduler%%:*}
  LISTEN_SAVED=$LISTEN LISTEN=$scheduler
  run_job "$job" 3 --tls-ca "$C/ca.pem" --trace "$TMP/$job.jsonl" ||
    { cat "$TMP/$job.out" "$TMP/daemon.log"; fail "job $job failed"; }
  LISTEN=$LISTEN_SAVED
  grep -q "connected to the daemon at $scheduler" "$TMP/$job.out" || fail "$job: agents did not connect"
  grep -q "embedded policy" "$TMP/$job.out" && fail "$job fell back: $(cat "$TMP/$job.out")"
  python3 - "$TMP/$job.jsonl" <<'PY' || fail "$job: trace check"
import json, sys
plans = [r for r in map(json.loads, open(sys.argv[1])) if r["type"] == "plan"]
assert [p["source"] for p in plans] == ["initial", "daemon", "daemon", "daemon"], plans
print("sources:", [p["source"] for p in plans])
PY
done

# A CA that did not sign the daemon's certificate, and a host name the certificate does not name:
# one warning per epoch naming the fault, the embedded policy, the job finishes, promptly.
check_untrusted() {  # JOB CA SCHEDULER WANT
  local start=$SECONDS
  LISTEN_SAVED=$LISTEN LISTEN=$3
  run_job "$1" 2 --tls-ca "$2" --trace "$TMP/$1.jsonl" || { cat "$TMP/$1.out"; fail "job $1 failed"; }
  LISTEN=$LISTEN_SAVED
  [ $((SECONDS - start)) -lt 60 ] || fail "$1 waited too long for an untrusted daemon"
  grep -q "epoch 2 uses the embedded policy: daemon at $3 unreachable (TLS handshake with $3 failed: $4)" \
    "$TMP/$1.out" || fail "$1: no warning naming '$4': $(cat "$TMP/$1.out")"
  grep "embedded policy" "$TMP/$1.out" | head -1
  python3 - "$TMP/$1.jsonl" <<'PY' || fail "$1: trace check"
import json, sys
plans = [r for r in map(json.loads, open(sys.argv[1])) if r["type"] == "plan"]
assert [p["source"] for p in plans] == ["initial", "embedded-fallback", "embedded-fallback"], plans
PY
}
check_untrusted wrong-ca "$TMP/other/ca.pem" "$LISTEN" "certificate not trusted: unable to get local issuer certificate"
make_tls "$TMP/elsewhere" DNS:elsewhere.example
DAEMON_TLS_PID=$DAEMON_PID LISTEN_TLS=$LISTEN HTTP_TLS=$HTTP
start_daemon --tls-cert "$TMP/elsewhere/server.pem" --tls-key "$TMP/elsewhere/server.key"
check_untrusted wrong-host "$TMP/elsewhere/ca.pem" "$LISTEN" "certificate not trusted: IP address mismatch"
kill -9 "$DAEMON_PID"
DAEMON_PID=$DAEMON_TLS_PID LISTEN=$LISTEN_TLS HTTP=$HTTP_TLS

# A plain client on the TLS port gets one error line in clear text; half a handshake and garbage
# are closed within --hello-timeout; the daemon answers TLS clients meanwhile.
python3 - "$LISTEN" "$C/ca.pem" <<'PY' || fail "raw clients on the TLS port"
import socket, ssl, sys, time
host, port = sys.argv[1].rsplit(":", 1)
addr = (host, int(port))
plain = socket.create_connection(addr, timeout=5)
plain.sendall(b'{"type":"hello"}\n')
reply = plain.makefile().readline()
assert "this port speaks TLS" in reply, reply
print("plain client told:", reply.strip())
half = socket.create_connection(addr, timeout=15)
half.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")  # a ClientHello cut short
junk = socket.create_connection(addr, timeout=15)
junk.sendall(b"\x16\x00garbage\xff" * 20)
ctx = ssl.create_default_context(cafile=sys.argv[2])
start = time.monotonic()
with ctx.wrap_socket(socket.create_connection(addr, timeout=5), server_hostname=host) as t:
    print("a TLS client meanwhile:", t.version())
assert time.monotonic() - start < 2, "the handshake waited behind the stalled clients"
for s, what in ((half, "half handshake"), (junk, "garbage")):
    start = time.monotonic()
    try:
        while s.recv(4096):
            pass
    except (ConnectionResetError, socket.timeout) as e:
        assert not isinstance(e, socket.timeout), what + " not closed"
    print(what, "closed after", round(time.monotonic() - start, 1), "s")
PY
kill -0 "$DAEMON_PID" || fail "the TLS daemon died"

# A TLS agent on a plain daemon's port fails at once and carries on embedded.
"$SCHED" serve --listen 127.0.0.1:0 --ready-file "$TMP/plain.json" >"$TMP/plain.log" 2>&1 &
PLAIN_PID=$!
disown "$PLAIN_PID"
for _ in $(seq 200); do [ -s "$TMP/plain.json" ] && break; sleep 0.05; done
plain=$(json_get "$TMP/plain.json" "d['listen']")
start=$SECONDS
"${MPIRUN[@]}" -np 2 "$AGENT" --model lenet --epochs 2 --train-limit 1000 --test-limit 200 \
  --threads 1 --no-progress --scheduler "$plain" --job tls-to-plain --tls-ca "$C/ca.pem" \
  >"$TMP/tls-to-plain.out" 2>&1 || { cat "$TMP/tls-to-plain.out"; fail "tls-to-plain job failed"; }
[ $((SECONDS - start)) -lt 60 ] || fail "the TLS agent waited too long for a plain daemon"
grep -q "TLS handshake with $plain failed: the peer does not speak TLS" "$TMP/tls-to-plain.out" ||
  fail "no clear error for a plain daemon: $(cat "$TMP/tls-to-plain.out")"
grep "embedded policy" "$TMP/tls-to-plain.out" | head -1
kill -0 "$PLAIN_PID" || fail "the plain daemon died"

# A plain agent on the TLS port: told in clear text, embedded policy.
DBS_SCHEDULER=$LISTEN "${MPIRUN[@]}" -x DBS_SCHEDULER -np 2 "$AGENT" --model lenet --epochs 2 \
  --train-limit 1000 --test-limit 200 --threads 1 --no-progress --job plain-to-tls \
  >"$TMP/plain-to-tls.out" 2>&1 || { cat "$TMP/plain-to-tls.out"; fail "plain-to-tls job failed"; }
grep -q "the daemon refused: this port speaks TLS" "$TMP/plain-to-tls.out" ||
  fail "no clear error for a plain agent: $(cat "$TMP/plain-to-tls.out")"
kill -0 "$DAEMON_PID" || fail "the TLS daemon died"
echo "scheduler TLS ok"
