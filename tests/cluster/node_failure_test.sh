#!/usr/bin/env bash
# Cluster test 3: a node dies mid-epoch (kill -9 of its agent): the job ends within seconds with
# a message naming the rank and the host, and no rank is left running on any node.
source "$(dirname "$0")/lib/test.bash"
test_cluster_up
log=$DIR/job.log
DBS_LAUNCHER=mpirun DBS_OUT=$DIR/local/out sbatch --quiet -N 3 -o "$log" "$SBATCH_SCRIPT" \
  "${SMALL[@]}" --epochs 50 >/dev/null
# Wait until node3's agent trains (its first checkpoint is there), then kill it.
for _ in $(seq 600); do
  [ -s "$DIR/nodes/node3/local/out/checkpoint/checkpoint.bin" ] && break
  sleep 0.2
done
pid=$(agent_on 3)
[ -n "$pid" ] || { cat "$log"; fail "no agent found on node3"; }
kill -9 "$pid"
killed=$SECONDS
for _ in $(seq 300); do
  [ -z "$(squeue -h -o %i)" ] && break
  sleep 0.1
done
took=$((SECONDS - killed))
cat "$log"
[ -z "$(squeue -h -o %i)" ] || fail "the job is still running $took s after the kill"
echo "the job ended $took s after the kill"
[ $took -le 20 ] || fail "the job took $took s to end"
grep -Eq "rank 2.*node3|node3.*rank 2|node3.*task 2" "$log" || fail "the log does not name rank 2 on node3"
for k in 1 2 3; do
  [ -z "$(agent_on "$k")" ] || fail "an agent is left on node$k"
done
echo "node failure ok"
