#!/usr/bin/env bash
# Cluster test: nodes of different sizes. slurm.conf declares node1 with 2 CPUs and node2 with 1
# (each worth half a core of this machine: CPU quotas 1.0 / 0.5, and cpu.shares 2:1 when the
# machine is busy). The model is the CNN, whose steps gain from a second thread (lenet's small
# batches do not: node1 measured slower than node2). A job of agents/slurm/dbs.sbatch
# without --cpus-per-task gives each rank its own node's CPUs - 2 threads on node1, 1 on node2,
# said in each rank's start line - under srun and under mpirun, and the dbs policy gives node1
# the larger batch once it has measured both (by the last of 5 epochs). A job with
# --cpus-per-task=1 runs 1 thread on every node, and --threads on the agent's command line
# overrides both.
export DBS_CLUSTER_NODES=2 DBS_CLUSTER_CPUS=2,1 DBS_CLUSTER_QUOTAS=1.0,0.5
source "$(dirname "$0")/lib/test.bash"
test_cluster_up
local_out=$DIR/local/out

# threads_of LOG RANK: "N TBB thread(s) (why)" from the start line of RANK in LOG, with its host.
threads_of() {
  grep -E "\[rank $2\] info: host " "$1" | head -n 1 |
    sed -nE 's/.*info: host ([^,]+), ([0-9]+ TBB thread\(s\) \(.*\)) of [0-9]+ available.*/\1: \2/p'
}

# expect_threads LOG RANK WANT: RANK's start line in LOG says WANT.
expect_threads() {
  local got
  got=$(threads_of "$1" "$2")
  [ "$got" = "$3" ] || { cat "$1"; fail "rank $2: '$got', expected '$3'"; }
}

# run_job NAME SBATCH_ARGS... -- AGENT_ARGS...: the job's log is $DIR/job-NAME.log; fails with it
# when the job fails.
run_job() {
  local name=$1 log=$DIR/job-$1.log
  shift
  rm -rf "$DIR"/nodes/node*/local/out
  local start=$SECONDS
  DBS_OUT=$local_out submit "$log" "$@" || { cat "$log"; fail "$name: the job failed"; }
  echo "== $name: $((SECONDS - start)) s"
  grep -q "^final: test accuracy" "$log" || { cat "$log"; fail "$name: no final line in the log"; }
}

for launcher in srun mpirun; do
  log=$DIR/job-mixed-$launcher.log
  DBS_LAUNCHER=$launcher run_job "mixed-$launcher" -N 2 -- --model cnn --batch 128 \
    --train-limit 1280 --test-limit 200 --seed 3 --policy dbs --epochs 5
  grep -E "^dbs.sbatch: job|\] info: host " "$log"
  grep -qE "^dbs.sbatch: job .* on node\[1-2\], CPUs per node 2,1, $launcher," "$log" ||
    fail "$launcher: the job's first line does not show the CPUs per node"
  expect_threads "$log" 0 "node1: 2 TBB thread(s) (SLURM_CPUS_ON_NODE: 2 CPU(s) / 1 rank(s) on the node)"
  expect_threads "$log" 1 "node2: 1 TBB thread(s) (SLURM_CPUS_ON_NODE: 1 CPU(s) / 1 rank(s) on the node)"
  python3 - "$(node_local 1 "$local_out")/summary.json" <<'PY' || fail "$launcher: the plan did not favour node1"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["config"]["hosts"] == ["node1", "node2"], d["config"]["hosts"]
first, later = d["epochs"][0], d["epochs"][1:]
print("batch per rank by epoch:", [e["batch"] for e in d["epochs"]],
      "throughput (img/s) after the first:", [[round(v) for v in e["throughput"]] for e in later])
assert first["batch"][0] == first["batch"][1], ("the first epoch is not split evenly", first["batch"])
# Judged over the epochs after the first, not on one: the other tests that share the machine can
# slow node1 (its quota is a core, which a busy machine does not always give), down to a lead
# of 1.2x, within the noise of a few epochs' step times, where the gain gate rightly keeps the
# equal split for an epoch or two: node1 has the larger batch by the last of 5 epochs.
mean = [sum(e["throughput"][r] for e in later) / len(later) for r in (0, 1)]
assert mean[0] > mean[1], ("node1 is not the faster", mean)
assert later[-1]["batch"][0] > later[-1]["batch"][1], ("node1 does not have the larger batch", later)
PY
done

# A uniform --cpus-per-task job: every rank runs that many threads, whatever its node holds.
run_job uniform -N 2 --cpus-per-task=1 -- "${SMALL[@]}" --epochs 1
grep -qE "^dbs.sbatch: job .*, 1 CPU\(s\) per task, srun," "$DIR/job-uniform.log" ||
  fail "uniform: the job's first line does not show the CPUs per task"
expect_threads "$DIR/job-uniform.log" 0 "node1: 1 TBB thread(s) (SLURM_CPUS_PER_TASK)"
expect_threads "$DIR/job-uniform.log" 1 "node2: 1 TBB thread(s) (SLURM_CPUS_PER_TASK)"

# --threads on the agent's command line wins over the node's CPUs.
run_job explicit -N 2 -- "${SMALL[@]}" --epochs 1 --threads 1
expect_threads "$DIR/job-explicit.log" 0 "node1: 1 TBB thread(s) (--threads)"
expect_threads "$DIR/job-explicit.log" 1 "node2: 1 TBB thread(s) (--threads)"
echo "mixed nodes ok"
