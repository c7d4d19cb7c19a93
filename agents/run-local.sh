#!/usr/bin/env bash
# The main job on this machine: installs what is missing, builds, then trains the case-study CNN
# on Fashion-MNIST with 2 MPI ranks under DBS, rank 1 disturbed x3 from the second epoch, and
# closes with the efficiency reached. Extra arguments go to dbs-agent (--help lists them).
#   --with-scheduler   first start a local dbs-scheduler serve (token in out/scheduler-token,
#                      state in out/scheduler-state, log in out/scheduler.log) and plan through
#                      it; the daemon is stopped at the end, also when the job fails
#   DBS_RANKS=N   ranks (default 2); the cores are shared out among them
set -euo pipefail
with_scheduler=false
if [ "${1:-}" = "--with-scheduler" ]; then
  with_scheduler=true
  shift
fi
source "$(dirname "$0")/setup.sh"
dbs_setup_packages
dbs_build build
cd "$DBS_ROOT"
mkdir -p out
scheduler_args=()
if $with_scheduler; then
  if [ ! -s out/scheduler-token ]; then
    (umask 077 && head -c 32 /dev/urandom | base64 >out/scheduler-token)
  fi
  chmod 600 out/scheduler-token
  rm -f out/scheduler-ready.json
  build/scheduler/dbs-scheduler serve --listen 127.0.0.1:0 --http 127.0.0.1:0 --http-trust-loopback \
    --token-file out/scheduler-token --state-dir out/scheduler-state \
    --ready-file out/scheduler-ready.json >>out/scheduler.log 2>&1 &
  daemon=$!
  trap 'kill -TERM "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null || true' EXIT
  trap 'exit 130' INT TERM
  for _ in $(seq 200); do [ -s out/scheduler-ready.json ] && break; sleep 0.05; done
  [ -s out/scheduler-ready.json ] || { tail -n 5 out/scheduler.log >&2; echo "dbs: the daemon did not start" >&2; exit 1; }
  listen=$(python3 -c 'import json; print(json.load(open("out/scheduler-ready.json"))["listen"])')
  http=$(python3 -c 'import json; print(json.load(open("out/scheduler-ready.json"))["http"])')
  job=local-$(date +%Y%m%d-%H%M%S)-$$
  echo "dbs: scheduler daemon on $listen, status page http://$http/, job $job"
  # The agents get the job's key, which opens this job only, not the daemon token (the admin's).
  (umask 077 && build/scheduler/dbs-scheduler job-key --token-file out/scheduler-token "$job" \
    >out/scheduler-job.key)
  scheduler_args=(--scheduler "$listen" --token-file out/scheduler-job.key --job "$job")
fi
ranks=${DBS_RANKS:-2}
cores=$(nproc)
threads=$((cores / ranks > 0 ? cores / ranks : 1))
echo "dbs: $ranks ranks x $threads TBB threads on $cores cores; trace in out/trace.jsonl"
"${DBS_MPIRUN[@]}" -np "$ranks" build/agents/dbs-agent --epochs 5 --threads "$threads" \
  --policy dbs --disturb rank=1,factor=3,from=2 \
  --trace out/trace.jsonl --summary out/summary.json ${scheduler_args[@]+"${scheduler_args[@]}"} "$@"
python3 - out/summary.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
e = d["epochs"]
steady = e[2:] if len(e) > 2 else e
eff = sum(x["efficiency"] for x in steady) / len(steady)
print(f"dbs: efficiency reached {100 * eff:.1f}% of ideal (mean of epochs {steady[0]['epoch']}-"
      f"{steady[-1]['epoch']}), final test accuracy {100 * d['test_acc']:.2f}%")
PY
if $with_scheduler; then
  echo "dbs: the daemon's trace of this job is out/scheduler-state/traces/$job.jsonl"
fi
