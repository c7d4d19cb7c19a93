#!/usr/bin/env bash
# Cluster test 5: a checkpoint written by 3 ranks (node-local copies) resumes on 2 and on 4
# ranks: parameters and optimizer state carry over (the result matches an uninterrupted run up
# to summation order), the plan is re-made for the new world and the trace says so. A node
# without a copy (node4) gets one from another rank; copies that differ stop the job at start.
source "$(dirname "$0")/lib/test.bash"
NODES=4 DBS_CLUSTER_NODES=4 DBS_CLUSTER_QUOTAS=1.0,0.5,0.25,0.5
export DBS_CLUSTER_NODES DBS_CLUSTER_QUOTAS
test_cluster_up
args=("${SMALL[@]}" --policy static)
n1=$DIR/nodes/node1/local

DBS_OUT=$DIR/local/straight submit "$DIR/straight.log" -N 3 -w node[1-3] -- "${args[@]}" --epochs 2 \
  --save-weights "$DIR/local/straight/weights.bin" ||
  { cat "$DIR/straight.log"; fail "the uninterrupted job failed"; }
DBS_OUT=$DIR/local/w3 submit "$DIR/first.log" -N 3 -w node[1-3] -- "${args[@]}" --epochs 1 ||
  { cat "$DIR/first.log"; fail "the first epoch on 3 nodes failed"; }
for k in 1 2 3; do cp -a "$DIR/nodes/node$k/local/w3" "$DIR/nodes/node$k/local/w4"; done
cp -a "$DIR/nodes/node1/local/w3" "$DIR/nodes/node1/local/stale"  # for the disagreement below

for n in 2 4; do
  log=$DIR/resume-$n.log
  out=w3  # on 2 nodes the 3-rank checkpoint in place; on 4 its copy, with none on node4
  [ $n -eq 4 ] && out=w4
  DBS_OUT=$DIR/local/$out submit "$log" -N "$n" -w "node[1-$n]" -- "${args[@]}" --epochs 2 \
    --save-weights "$DIR/local/$out/weights.bin" ||
    { cat "$log"; fail "resume on $n nodes failed"; }
  cat "$log"
  grep -q "checkpoint of 3 ranks resumed on $n" "$log" || fail "no resume message for $n ranks"
  [ $n -eq 4 ] && { grep -q "no checkpoint in .* on node4" "$log" || fail "node4 should report it had no copy"; }
  python3 - "$n1/$out/trace.jsonl" "$n" <<'PY' || fail "trace check ($n ranks)"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
n = int(sys.argv[2])
resume = [r for r in recs if r["type"] == "plan" and r["source"] == "resume"]
assert len(resume) == 1, resume
assert len(resume[0]["batch"]) == n and resume[0]["epoch"] == 2, resume[0]
assert "re-made for %d ranks" % n in resume[0]["reason"], resume[0]
evals = [r["epoch"] for r in recs if r["type"] == "eval"]
assert evals == [1, 2], evals
print("trace: plan for epoch 2 re-made:", resume[0]["batch"], resume[0]["reason"])
PY
  read -r diff scale < <(python3 "$TESTS/lib/weights_diff.py" "$n1/straight/weights.bin" "$n1/$out/weights.bin")
  echo "resumed on $n ranks: max |w - w_straight| = $diff (max |w| = $scale)"
  python3 -c "import sys; sys.exit(0 if $diff <= 1e-4 * max(1.0, $scale) else 1)" ||
    fail "resumed on $n ranks, the parameters are not those of the uninterrupted run"
done

# Node-local copies that disagree: node2 holds a checkpoint after epoch 2, the others after 1.
for k in 1 3; do cp -a "$DIR/nodes/node1/local/stale" "$DIR/nodes/node$k/local/mixed"; done
cp -a "$DIR/nodes/node2/local/w3" "$DIR/nodes/node2/local/mixed"
rc=0
DBS_OUT=$DIR/local/mixed submit "$DIR/mixed.log" -N 3 -w node[1-3] -- "${args[@]}" --epochs 3 || rc=$?
cat "$DIR/mixed.log"
[ $rc -ne 0 ] || fail "a job whose ranks hold different checkpoints ran"
grep -q "the ranks hold different checkpoints" "$DIR/mixed.log" || fail "no message about the copies"
grep -q "rank 1 (node2) has a checkpoint after epoch 2" "$DIR/mixed.log" || fail "rank 1 / node2 not named"
grep -q "^ *1 " "$DIR/mixed.log" && fail "an epoch ran although the copies differ"
echo "resume on another world ok"
