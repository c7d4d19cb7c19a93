#!/usr/bin/env bash
# Cluster test: the bed is one per machine. A test finding it held by a live run waits and then
# fails naming the holder; finding it left by a killed run (another shape, its owner gone), it
# takes it down and builds its own; `cluster.sh up` refuses a cluster of another shape. Without
# Slurm (DBS_CLUSTER_SLURM=0): only the claim and the shapes are under test.
source "$(dirname "$0")/lib/test.bash"
export DBS_CLUSTER_SLURM=0
[ "$(id -u)" -eq 0 ] || { echo "cluster: skipped: needs root (network namespaces, cgroups)"; exit 77; }
work=$(mktemp -d)
holder=
cleanup() {
  [ -n "$holder" ] && pkill -9 -P "$holder" 2>/dev/null; [ -n "$holder" ] && kill -9 "$holder" 2>/dev/null
  "$TESTS/cluster.sh" down
  rm -rf "$work"
}
trap cleanup EXIT

# use_bed NODES [CMD]: a process that claims and builds a bed of NODES nodes, as a test does,
# then runs CMD.
use_bed() {
  DBS_CLUSTER_NODES=$1 bash -c "source '$TESTS/lib/test.bash'; test_cluster_up >/dev/null; ${2:-true}"
}

# A run that holds a 2-node bed.
DBS_CLUSTER_NODES=2 bash -c "source '$TESTS/lib/test.bash'; test_cluster_up >/dev/null; touch $work/up; sleep 600" \
  >"$work/holder.log" 2>&1 &
holder=$!
for _ in $(seq 300); do [ -e "$work/up" ] && break; sleep 0.1; done
[ -e "$work/up" ] || { cat "$work/holder.log"; fail "the holder did not bring its bed up"; }

# While it lives, another run waits and then fails naming it; the bed stays as it was.
rc=0
DBS_CLUSTER_WAIT=2 use_bed 3 >"$work/waiter.log" 2>&1 || rc=$?
cat "$work/waiter.log"
[ $rc -ne 0 ] || fail "a second run used the bed while the first held it"
grep -q "still in use by pid $holder" "$work/waiter.log" || fail "the refusal does not name the holder $holder"
[ "$(cat "$DIR/nodes.count")" = 2 ] || fail "the waiting run changed the holder's bed"

# The holder is killed before its clean-up: its bed (2 nodes) stays behind.
pkill -9 -P "$holder"
kill -9 "$holder"
wait "$holder" 2>/dev/null || true
holder=
[ "$(cat "$DIR/nodes.count")" = 2 ] || fail "the killed holder's bed is not there to test with"

# `cluster.sh up` of another shape refuses it rather than reuse its state.
rc=0
out=$("$TESTS/cluster.sh" up 2>&1) || rc=$?
echo "$out"
[ $rc -eq 1 ] || fail "cluster.sh up on a bed of another shape: exit $rc, expected 1"
grep -q "another shape is up.*nodes=2.*asked for nodes=3" <<<"$out" || fail "the refusal does not name both shapes"

# The next test takes the leftover down and builds its own 3 nodes, then leaves nothing.
use_bed 3 "cat '$DIR/nodes.count' >'$work/count'; cat '$DIR.owner' >'$work/owner'; echo \$\$ >'$work/pid'" \
  >"$work/next.log" 2>&1 || { cat "$work/next.log"; fail "the next test could not build its bed"; }
cat "$work/next.log"
grep -q "taking down a cluster left by an earlier run" "$work/next.log" || fail "the leftover was not named"
[ "$(cat "$work/count")" = 3 ] || fail "the next test ran on $(cat "$work/count") nodes, expected 3"
[ "$(cut -d' ' -f1 "$work/owner")" = "$(cat "$work/pid")" ] || fail "the owner file did not name the next test"
[ ! -e "$DIR" ] || fail "the next test left $DIR behind"
[ ! -s "$DIR.owner" ] || fail "the next test did not give up its claim: $(cat "$DIR.owner")"
echo "stale bed ok"
