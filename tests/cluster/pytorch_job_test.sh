#!/usr/bin/env bash
# Cluster test: examples/pytorch/train.sbatch, submitted as a user would, on 2 nodes of CPU quotas
# 1.0 / 0.15: srun starts one Debian-python rank per node, torch.distributed (gloo over the
# bridge) connects them through the first node's address, and dbs.torch gives the node held to
# 15% of a core the smaller batch (also when other work holds node1 below its full core). Then the same job planned by dbs-scheduler serve on the head
# node, the script given only DBS_SCHEDULER and DBS_TOKEN_FILE: the ranks hold the job key, and
# the daemon's trace has the job's plans. Skips where the dbs package is not built or torch is
# missing.
export DBS_CLUSTER_NODES=2 DBS_CLUSTER_QUOTAS=1.0,0.15
source "$(dirname "$0")/lib/test.bash"
[ -f "$ROOT/build/python/dbs/__init__.py" ] ||
  { echo "cluster: skipped: no dbs package in $ROOT/build/python (meson option python)"; exit 77; }
/usr/bin/python3 -c "import torch" 2>/dev/null ||
  { echo "cluster: skipped: /usr/bin/python3 has no torch (apt-get install python3-torch)"; exit 77; }
test_cluster_up
SBATCH_SCRIPT=$ROOT/examples/pytorch/train.sbatch
# The nodes' host names resolve nowhere on the bed: gloo takes each node's own interface.
export GLOO_SOCKET_IFNAME=eth0
out=$DIR/pytorch-out
rm -rf "$out"
log=$DIR/job-pytorch.log
start=$SECONDS
DBS_OUT=$out submit "$log" -N 2 -- --epochs 3 --batch 64 --train-limit 768 --test-limit 128 \
  --policy dbs --seed 1 || { cat "$log"; fail "train.sbatch: the job failed"; }
echo "== train.sbatch: $((SECONDS - start)) s"
cat "$log"
[ -s "$out/summary.json" ] || fail "no summary at $out/summary.json"
/usr/bin/python3 - "$out/summary.json" <<'PY' || fail "summary check"
import json, sys
d = json.load(open(sys.argv[1]))
epochs = d["epochs"]
assert len(epochs) == 3, [e["epoch"] for e in epochs]
for e in epochs:
    assert len(e["batch"]) == 2 and sum(e["batch"]) == 64, e["batch"]
    assert len(e["throughput"]) == 2 and all(v > 0 for v in e["throughput"]), e["throughput"]
last = epochs[-1]
# node2 is held to 15% of a core: dbs moved samples to node1 once it measured both.
assert last["batch"][1] < last["batch"][0], ("node2 kept the larger batch", last["batch"])
assert 0 < d["test_acc"] <= 1, d["test_acc"]
print("batches per epoch:", [e["batch"] for e in epochs], "throughput in the last:",
      [round(v) for v in last["throughput"]], "test_acc", d["test_acc"])
PY

# Through the daemon on the head node (the bridge's address, a token).
state=$DIR/daemon token=$DIR/daemon-token
(umask 077 && head -c 32 /dev/urandom | base64 >"$token")
DAEMON_PID=
trap '[ -n "$DAEMON_PID" ] && kill -9 "$DAEMON_PID" 2>/dev/null; test_cluster_down' EXIT
"$SCHED" serve --listen "$CLUSTER_HEAD:0" --token-file "$token" --state-dir "$state" \
  --ready-file "$DIR/ready.json" >"$DIR/daemon.log" 2>&1 &
DAEMON_PID=$!
for _ in $(seq 200); do [ -s "$DIR/ready.json" ] && break; sleep 0.05; done
listen=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["listen"])' "$DIR/ready.json") ||
  fail "daemon not ready: $(cat "$DIR/daemon.log")"
rm -rf "$out"
log=$DIR/job-pytorch-daemon.log
DBS_SCHEDULER=$listen DBS_TOKEN_FILE=$token DBS_OUT=$out submit "$log" -N 2 -- --epochs 3 \
  --batch 64 --train-limit 768 --test-limit 128 --policy dbs --seed 1 ||
  { cat "$log" "$DIR/daemon.log"; fail "train.sbatch with the daemon: the job failed"; }
cat "$log"
! grep -rqF "$(cat "$token")" "$out" || fail "the daemon token was written into the job's folder"
trace=$(ls "$state"/traces/*.jsonl 2>/dev/null | head -n 1)
[ -n "$trace" ] || { cat "$DIR/daemon.log"; fail "the daemon has no trace of the job"; }
plans=$(grep -c '"type":"plan".*"source":"daemon"\|"source":"daemon".*"type":"plan"' "$trace" || true)
[ "$plans" -ge 2 ] || { cat "$trace" "$DIR/daemon.log"; fail "the daemon planned $plans epoch(s), expected 2"; }
[ -s "$out/summary.json" ] || fail "no summary with the daemon"
echo "daemon: $plans plans from the daemon in $(basename "$trace")"
echo "pytorch job ok"
