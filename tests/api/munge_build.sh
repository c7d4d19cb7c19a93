# --auth munge where the build has no munge (meson -Dmunge=disabled): dbs-scheduler serve and
# dbs-agent each refuse it at start with one error line saying so and exit 2 (the agent before
# MPI starts), and the library refuses it naming the field (tests/api/c_api_tls_test.c). In a
# build with munge both accept the option (they fail on the next bad option instead).
# Argument: whether this build has munge (true/false). Run from the source root with DBS_BUILD.
source "$(dirname "$0")/../e2e/common.bash"
HAS_MUNGE=$1
# one_error WANT CMD...: exit 2 and a single line of output naming WANT.
one_error() {
  local want=$1 out rc=0
  shift
  out=$("$@" 2>&1) || rc=$?
  [ "$rc" -eq 2 ] || fail "exit $rc, not 2, from: $* ($out)"
  [ "$(wc -l <<<"$out")" -eq 1 ] || fail "more than one line from: $*: $out"
  grep -qF -- "$want" <<<"$out" || fail "'$want' not in the output of: $*: $out"
  echo "ok: $out"
}
agent=("$AGENT" --model lenet --epochs 1 --threads 1 --scheduler 127.0.0.1:1 --job x --auth munge)
if [ "$HAS_MUNGE" = true ]; then
  one_error "--data $TMP/none: no such folder" "${agent[@]}" --data "$TMP/none"
  one_error "--listen '127.0.0.1:no-port': port must be a number" "$SCHED" serve --auth munge --listen 127.0.0.1:no-port
  echo "munge built: --auth munge is taken"
else
  one_error "dbs-agent: error: --auth 'munge': this dbs is built without munge" "${agent[@]}"
  one_error "--auth munge: munge is not built into this dbs-scheduler" \
    "$SCHED" serve --auth munge --listen 127.0.0.1:0
  one_error "munge is not built" "$SCHED" serve --auth token,munge --listen 127.0.0.1:0
  echo "no munge: --auth munge is refused at start"
fi
