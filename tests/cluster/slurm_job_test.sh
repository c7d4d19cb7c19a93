#!/usr/bin/env bash
# Cluster test 1: agents/slurm/dbs.sbatch on 3 nodes of CPU quotas 1.0 / 0.5 / 0.25 trains,
# its output and checkpoints land in node-local folders, and its log has no progress-bar line.
# Launched with mpirun, whose ranks each get a pseudo-terminal: the bar must still stay out of
# the Slurm log. Then the same with srun (PMIx). The bed is built from the settings that
# `dbs-scheduler bed traces/bed-3.json` prints, and has that spec's quotas and link rates.
source "$(dirname "$0")/lib/test.bash"
eval "$("$SCHED" bed traces/bed-3.json)" || fail "dbs-scheduler bed traces/bed-3.json failed"
test_cluster_up
k=0
for quota_us in 100000 50000 25000; do
  k=$((k + 1))
  have=$(cat "$CLUSTER_CGROUP/node$k/cpu.cfs_quota_us")
  [ "$have" = "$quota_us" ] || fail "node$k's CPU quota is $have us a period, traces/bed-3.json's is $quota_us"
  tc qdisc show dev "dbsc-v$k" | grep -q "rate 1Gbit" ||
    fail "node$k's link is not at traces/bed-3.json's 1 Gbit/s: $(tc qdisc show dev "dbsc-v$k")"
done
echo "the bed has traces/bed-3.json's shape: quotas $DBS_CLUSTER_QUOTAS, links $DBS_CLUSTER_RATES"
local_out=$DIR/local/out

for launcher in mpirun srun; do
  log=$DIR/job-$launcher.log
  rm -rf "$DIR"/nodes/node*/local/out
  start=$SECONDS
  DBS_LAUNCHER=$launcher DBS_OUT=$local_out submit "$log" -N 3 -- "${SMALL[@]}" --epochs 2 ||
    { cat "$log"; fail "$launcher: the job failed"; }
  echo "== $launcher: $((SECONDS - start)) s"
  cat "$log"
  grep -q "^final: test accuracy" "$log" || fail "$launcher: no final line in the log"
  if grep -q $'\r' "$log"; then fail "$launcher: progress-bar lines (carriage returns) in the log"; fi
  grep -q "kernels" "$log" || fail "$launcher: the ranks did not log their kernels"
  # Rank 0 (node1) wrote trace and summary into its own folder; every node holds its own
  # checkpoint; nothing went to the head's view of the same path.
  n1=$(node_local 1 "$local_out")
  [ -s "$n1/trace.jsonl" ] && [ -s "$n1/summary.json" ] || fail "$launcher: no trace/summary on node1"
  for k in 1 2 3; do
    [ -s "$(node_local "$k" "$local_out")/checkpoint/checkpoint.bin" ] ||
      fail "$launcher: no checkpoint on node$k"
  done
  [ ! -e "$local_out" ] || fail "$launcher: $local_out exists on the head: the folder is not node-local"
  python3 - "$n1/summary.json" <<'PY' || fail "$launcher: summary check"
import json, sys
d = json.load(open(sys.argv[1]))
hosts = d["config"]["hosts"]
assert hosts == ["node1", "node2", "node3"], hosts
# --overlap's default (auto) is on where the ranks are on more than one host.
assert d["config"]["overlap"] is True, ("the exchange is not overlapped across nodes", d["config"])
assert len(d["epochs"]) == 2, d["epochs"]
print("hosts", hosts, "throughput per rank (img/s) in epoch 2:", d["epochs"][-1]["throughput"])
PY
done
echo "slurm job ok"
