#!/usr/bin/env bash
# Cluster test 4: resume on node-local disks. A job requeued during its second epoch (Slurm's
# SIGTERM: every rank checkpoints where it stopped) continues from there on every rank and ends
# bit-identical to an uninterrupted run.
source "$(dirname "$0")/lib/test.bash"
test_cluster_up
args=("${SMALL[@]}" --policy fixed:30,20,10 --epochs 3)

DBS_OUT=$DIR/local/straight submit "$DIR/straight.log" -N 3 -- "${args[@]}" \
  --save-weights "$DIR/local/straight/weights.bin" ||
  { cat "$DIR/straight.log"; fail "the uninterrupted job failed"; }

# Rank 0 slowed x40 by sleep from epoch 2 (timing only: the fixed plan and the numbers stay
# those of the straight run): epochs 2 and 3 take seconds, so the requeue lands inside the run.
# Undisturbed, lenet's epochs take 0.06 s and the job could finish before Slurm requeued it.
log=$DIR/requeued.log
DBS_OUT=$DIR/local/requeued sbatch --quiet -N 3 -o "$log" "$SBATCH_SCRIPT" "${args[@]}" \
  --disturb rank=0,factor=40,from=2 --save-weights "$DIR/local/requeued/weights.bin" >/dev/null
job=$(job_id_of_last)
ckpt=$DIR/nodes/node3/local/requeued/checkpoint/checkpoint.bin
for _ in $(seq 900); do [ -s "$ckpt" ] && break; sleep 0.2; done
[ -s "$ckpt" ] || { cat "$log"; fail "no checkpoint on node3 after the first epoch"; }
scontrol requeue "$job" || fail "scontrol requeue $job"
# fail_job MESSAGE: fail, after what slurmctld logged of the job (why it did not run again).
fail_job() {
  grep -E "JobId=$job( |$)" "$DIR/slurm/log/slurmctld.log" | tail -n 20 >&2
  local f
  for f in "$DIR"/slurm/log/slurmd-node*.log; do echo "== ${f##*/}" >&2; tail -n 15 "$f" >&2; done
  fail "$@"
}
echo "requeued job $job after its first checkpoint"
# Slurm holds a requeued job back for two minutes (its BeginTime); let it start at once. The
# job passes through REQUEUED and COMPLETING first (the first run's ranks still stopping).
state=
for _ in $(seq 150); do state=$(job_state "$job"); [ "$state" = PENDING ] && break; sleep 0.2; done
[ "$state" = PENDING ] || { cat "$log"; fail_job "job $job not pending 30 s after the requeue: ${state:-no answer}"; }
# That hold also keeps the second run out of the second in which the nodes killed the first:
# slurmd then revoked the job's credential, and it refuses a credential made in the same second
# (Slurm compares whole seconds: "Job 2 already killed, do not launch batch job"), and the job
# ends at once with 1 and no output. The kill came before the job was pending, so the hold is
# lifted once the clock has passed the second in which it became pending (all nodes are here).
pending_at=$(date +%s)
while [ "$(date +%s)" -le "$pending_at" ]; do sleep 0.05; done
scontrol update JobId="$job" StartTime=now || fail "scontrol update StartTime=now"
rc=0
wait_job "$job" || rc=$?
cat "$log"
[ "$rc" -eq 0 ] || fail_job "the requeued job ended with $rc ($(job_state "$job"))"
grep -q "restart 1" "$log" || fail_job "the job did not run a second time"
grep -q "^final: test accuracy" "$log" || fail_job "the requeued job did not finish"
n1=$DIR/nodes/node1/local
python3 - "$n1/requeued/trace.jsonl" <<'PY' || fail "trace check"
import collections, json, sys
evals = collections.Counter(r["epoch"] for r in map(json.loads, open(sys.argv[1])) if r["type"] == "eval")
assert evals == {1: 1, 2: 1, 3: 1}, f"every epoch exactly once in the trace, got {dict(evals)}"
print("evaluated epochs", dict(evals))
PY
cmp "$n1/straight/weights.bin" "$n1/requeued/weights.bin" || fail "the requeued job's parameters differ"
echo "requeued job is bit-identical to the uninterrupted one"
