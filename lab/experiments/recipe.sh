#!/usr/bin/env bash
# The large-batch recipe study: at a large global batch (8,192) train with
# 0, 2 and 5 gradual-warmup epochs with linear lr scaling from the base batch (128), without
# scaling (no warmup: warmup ramps the lr from the base lr to the scaled one, so without scaling
# it changes nothing; --unscaled-warmups 0,2,5 runs them anyway), and a small-batch reference
# at the base batch; every configuration with each seed.
# 2 ranks, dbs balancing, lenet, Adam at lr 0.001 for batch 128 (0.064 when linearly scaled to
# 8,192), 20 epochs, lr x 0.1 from epoch 15. Ends with the table on stdout and OUTDIR/recipe.html.
#
#   lab/experiments/recipe.sh [options] OUTDIR
#     --build DIR        the build (default: build)
#     --data DIR         Fashion-MNIST (default: /usr/share/datasets/fashion-mnist)
#     --epochs N         epochs per run (default 20)
#     --decay-epochs L   epochs (from 1) at whose start lr x 0.1, comma list; "" = none (default 15)
#     --seeds L          comma list (default 1,2)
#     --batch L          the large global batches, comma list (default 8192)
#     --warmups L        warmup epochs to try with linear scaling (default 0,2,5)
#     --unscaled-warmups L  the same without scaling (default 0)
#     --train-limit N    training samples (default 0 = all 60,000)
#     --quick            a smoke run: 2 epochs, seed 1, 4,096 samples, no decay
#     -- ARGS            more dbs-agent options for every run (e.g. --optimizer sgd --lr 0.01)
# Writes OUTDIR/runs/RUN.{log,summary.json,metrics.jsonl,jsonl}, OUTDIR/recipe.jsonl (one record
# per run: config, per-epoch test accuracy and lr, final accuracy, wall seconds) and
# OUTDIR/recipe.html. Re-running skips the runs already recorded. NP=3 changes the ranks.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/study_common.bash"

build=build data=/usr/share/datasets/fashion-mnist epochs=20 decay=15 seeds=1,2 batch=8192
warmups=0,2,5 unscaled=0 train_limit=0 test_limit=0 out=""
extra=()
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --data) data=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --decay-epochs) decay=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --warmups) warmups=$2; shift 2 ;;
    --unscaled-warmups) unscaled=$2; shift 2 ;;
    --train-limit) train_limit=$2; shift 2 ;;
    --quick) epochs=2 seeds=1 train_limit=4096 test_limit=1000 decay=""; shift ;;
    --) shift; extra=("$@"); break ;;
    *) study_arg recipe.sh "$1"; shift ;;  # --help, an unknown option or OUTDIR
  esac
done
study_init recipe.sh "$build" "$data"

common=(--data "$data" --model lenet --threads 1 --policy dbs --wait sleep --optimizer adam --lr 0.001
        --base-batch 128 --epochs "$epochs" --train-limit "$train_limit"
        --test-limit "$test_limit")
[ -z "$decay" ] || common+=(--decay-epochs "$decay")
runs=()
for seed in ${seeds//,/ }; do
  study_run "$out" "b128-s$seed" recipe full "${common[@]}" --batch 128 --lr-scaling none \
    --seed "$seed" "${extra[@]}"
  runs+=("b128-s$seed")
  for b in ${batch//,/ }; do
    for scaling in none linear; do
      list=$warmups
      [ "$scaling" = none ] && list=$unscaled
      for w in ${list//,/ }; do
        name="b$b-$scaling-w$w-s$seed"
        study_run "$out" "$name" recipe full "${common[@]}" --batch "$b" --lr-scaling "$scaling" \
          --warmup-epochs "$w" --seed "$seed" "${extra[@]}"
        runs+=("$name")
      done
    done
  done
done
for r in "${runs[@]}"; do cat "$out/runs/$r.jsonl"; done >"$out/recipe.jsonl"
echo "recipe.sh: ${#runs[@]} runs in $out/recipe.jsonl; the page is $out/recipe.html" >&2
"$LAB" study report --in "$out/recipe.jsonl" --html "$out/recipe.html"
