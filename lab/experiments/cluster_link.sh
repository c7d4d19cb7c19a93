#!/usr/bin/env bash
# A study on the cluster test bed (tests/cluster/cluster.sh): the gradient exchange over a
# rate-limited link (overlap and the sharded update against the plain exchange). Two nodes of
# the bed at full cores (DBS_CLUSTER_QUOTAS 1.0), each link limited by tbf to DBS_CLUSTER_RATES
# (default here 200mbit); Open MPI talks TCP over the bridge. dbs-lab balance runs under srun:
# `static` plain, with --overlap and with --update sharded, twice each, alternating, and prints
# its JSON (steady_wall_s per run). Extra options go to dbs-lab balance (--runs replaces the runs; e.g.
# --allreduce ring --runs static,static+sharded,static,static+sharded).
# With `allreduce` first it times the exchanges alone instead: dbs-bench allreduce over the
# link, by default the cnn's gradient in each of the training's exchanges, spinning and asleep
# (other options after `allreduce` replace those).
#   lab/experiments/cluster_link.sh [dbs-lab balance options...]
#   lab/experiments/cluster_link.sh allreduce [dbs-bench allreduce options...]
export DBS_CLUSTER_NODES=${DBS_CLUSTER_NODES:-2}
export DBS_CLUSTER_QUOTAS=${DBS_CLUSTER_QUOTAS:-1.0}
export DBS_CLUSTER_RATES=${DBS_CLUSTER_RATES:-200mbit}
# The cluster test bed and its helpers (bring it up, fail, $BUILD) are the cluster tests'.
source "$(dirname "$0")/../../tests/cluster/lib/test.bash"
test_cluster_up >/dev/null
BENCH=$BUILD/bench/dbs-bench LAB=$BUILD/lab/dbs-lab
echo "nodes $NODES, quota $DBS_CLUSTER_QUOTAS, link $DBS_CLUSTER_RATES;" \
  "machine load at start: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
if [ "${1:-}" = allreduce ]; then
  shift
  [ -x "$BENCH" ] || fail "no $BENCH (build first)"
  [ $# -gt 0 ] || set -- --sizes 690593 --reps 20 --wait spin,sleep --exchange allreduce,ring,sharded,overlap
  srun -N "$NODES" --mpi=pmix "$BENCH" allreduce "$@"
  echo "machine load at end: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  exit 0
fi
[ -x "$LAB" ] || fail "no $LAB (build first)"
runs=(--runs static,static+overlap,static+sharded,static,static+overlap,static+sharded)
case " $* " in *" --runs "*) runs=() ;; esac
srun -N "$NODES" --mpi=pmix "$LAB" balance --model cnn --threads 1 --batch 128 --epochs 4 \
  --train-limit 3072 --test-limit 256 --steady-from 2 --disturb none --solo-epochs 0 \
  "${runs[@]}" "$@"
echo "machine load at end: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
