# The C ABI over TLS: dbs-scheduler serve --tls-cert/--tls-key on loopback with a throwaway CA
# (and a second CA that did not sign its certificate), then tests/api/c_api_tls_test.c against
# it. With the right CA the daemon plans; with the other CA each rank says once why the
# embedded policy planned instead, naming the untrusted certificate. Run from the source root
# with DBS_BUILD; argument: the test program.
source "$(dirname "$0")/../e2e/common.bash"
PROGRAM=$1
DAEMON_PID=
trap '[ -n "$DAEMON_PID" ] && kill -9 "$DAEMON_PID" 2>/dev/null; rm -rf "$TMP"' EXIT
make_tls "$TMP/tls"
make_tls "$TMP/other"
printf 'not a certificate\n' >"$TMP/notes.txt"
start_daemon --tls-cert "$TMP/tls/server.pem" --tls-key "$TMP/tls/server.key"
(umask 077 && "$SCHED" job-key --token-file "$TMP/token" c-api-tls >"$TMP/job.key")

"$PROGRAM" "$LISTEN" "$TMP/tls/ca.pem" "$TMP/other/ca.pem" "$TMP/job.key" "$TMP/notes.txt" \
  >"$TMP/out" 2>"$TMP/err" || { cat "$TMP/out" "$TMP/err"; fail "the C program failed"; }
cat "$TMP/out"
why="epoch 2 uses the embedded policy: daemon at $LISTEN unreachable (TLS handshake with $LISTEN failed: certificate not trusted: unable to get local issuer certificate)"
[ "$(grep -cF -- "$why" "$TMP/err")" -eq 2 ] || { cat "$TMP/err"; fail "not one line per rank saying: $why"; }
[ "$(grep -c " warning: " "$TMP/err")" -eq 2 ] || { cat "$TMP/err"; fail "other warnings than the fallback's"; }
grep -F -- "$why" "$TMP/err" | head -n 1
grep -q "job 'c-api-tls' created" "$TMP/daemon.log" || fail "the daemon did not see the job: $(cat "$TMP/daemon.log")"
echo "c api over TLS: ok"
