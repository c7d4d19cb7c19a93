#!/usr/bin/env bash
# DBS under a CPU quota: 2 ranks x 1 thread, cnn,
# 6,000 samples, global batch 256, 5 epochs, rank 1 held to 33% of a core by a cgroup quota,
# runs static, dbs-rate and dbs, prints dbs-lab balance's JSON (epoch seconds, plans per epoch, plan
# changes in the steady epochs, ratio to the independent ideal from stand-alone runs).
#   lab/experiments/balance_quota.sh [BUILD_DIR] [-- extra dbs-lab balance options]
# e.g. lab/experiments/balance_quota.sh build -- --quota 1=0.5 --wait spin --runs dbs
# Needs root and writable cgroups (v1 cpu controller or v2). The cgroups are named
# dbs-lab-<mpirun pid>-rank<r>; the ranks remove them on exit, and this script removes any
# left by a killed run.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=build
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then build=$1; shift; fi
[ "${1:-}" = "--" ] && shift
case $build in /*) ;; *) build=$root/$build ;; esac  # relative to the source root
lab="$build/lab/dbs-lab"
[ -x "$lab" ] || { echo "balance_quota.sh: no $lab (build first)" >&2; exit 1; }

# The defaults; an option given after -- replaces its default.
defaults=(--model cnn --threads 1 --batch 256 --epochs 5 --train-limit 6000 --test-limit 1000
          --steady-from 3 --runs static,dbs-rate,dbs --disturb none --quota 1=0.33)
args=(balance)
for ((i = 0; i < ${#defaults[@]}; i += 2)); do
  case " $* " in *" ${defaults[i]} "*) ;; *) args+=("${defaults[i]}" "${defaults[i + 1]}") ;; esac
done
mpirun --allow-run-as-root --oversubscribe --bind-to none -np "${NP:-2}" "$lab" "${args[@]}" "$@" &
pid=$!
cleanup() {
  local d
  for d in /sys/fs/cgroup/cpu/dbs-lab-"$pid"-rank* /sys/fs/cgroup/dbs-lab-"$pid"-rank*; do
    [ -d "$d" ] && rmdir "$d" 2>/dev/null || true
  done
}
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; cleanup' INT TERM
rc=0
wait "$pid" || rc=$?
cleanup
exit "$rc"
