#!/usr/bin/env bash
# The main job on this machine: installs what is missing, builds, and trains the case-study CNN
# on Fashion-MNIST. Extra arguments go to dbs-agent (see build/agents/dbs-agent --help).
set -euo pipefail
source "$(dirname "$0")/setup.sh"
dbs_setup_packages
dbs_build build
cd "$DBS_ROOT"
mkdir -p out
exec build/agents/dbs-agent --epochs 5 --model cnn --optimizer adam --lr 0.001 --batch 128 \
  --summary out/summary.json --trace out/trace.jsonl "$@"
