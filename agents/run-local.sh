#!/usr/bin/env bash
# The main job on this machine: installs what is missing, builds, then trains the case-study CNN
# on Fashion-MNIST with 2 MPI ranks under DBS, rank 1 disturbed x3 from the second epoch, and
# closes with the efficiency reached. Extra arguments go to dbs-agent (--help lists them).
#   DBS_RANKS=N   ranks (default 2); the cores are shared out among them
set -euo pipefail
source "$(dirname "$0")/setup.sh"
dbs_setup_packages
dbs_build build
cd "$DBS_ROOT"
mkdir -p out
ranks=${DBS_RANKS:-2}
cores=$(nproc)
threads=$((cores / ranks > 0 ? cores / ranks : 1))
echo "dbs: $ranks ranks x $threads TBB threads on $cores cores; trace in out/trace.jsonl"
"${DBS_MPIRUN[@]}" -np "$ranks" build/agents/dbs-agent --epochs 5 --threads "$threads" \
  --policy dbs --disturb rank=1,factor=3,from=2 \
  --trace out/trace.jsonl --summary out/summary.json "$@"
python3 - out/summary.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
e = d["epochs"]
steady = e[2:] if len(e) > 2 else e
eff = sum(x["efficiency"] for x in steady) / len(steady)
print(f"dbs: efficiency reached {100 * eff:.1f}% of ideal (mean of epochs {steady[0]['epoch']}-"
      f"{steady[-1]['epoch']}), final test accuracy {100 * d['test_acc']:.2f}%")
PY
