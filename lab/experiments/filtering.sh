#!/usr/bin/env bash
# The filtering study: train on the full training set, on the samples
# `dbs-agent filter` keeps (t-SNE + per-class DBSCAN noise removed) and on its random control
# (as many removed per class, at random), at global batches 128, 2,048 and 8,192. 2 ranks, dbs
# balancing, lenet, Adam at lr 0.001 for batch 128, linear lr scaling with 2 warmup epochs above
# it, 6 epochs, the same settings for the three data sets at each batch. Ends with the table on
# stdout and OUTDIR/filtering.html.
#
#   lab/experiments/filtering.sh [options] OUTDIR
#     --build DIR        the build (default: build)
#     --data DIR         Fashion-MNIST (default: /usr/share/datasets/fashion-mnist)
#     --weights FILE     trained weights to filter with (default: OUTDIR/cnn.bin, trained first
#                        as the README's noise filtering section does: cnn, 5 epochs, 2 ranks)
#     --weights-model M  the model of --weights (default cnn)
#     --epochs N         epochs per run (default 6)
#     --warmup W         warmup epochs above the base batch (default 2)
#     --batches L        global batches, comma list (default 128,2048,8192)
#     --seeds L          comma list (default 1)
#     --train-limit N    training samples, for the filter and the runs (default 0 = all)
#     --quick            a smoke run: 2 epochs, 2,048 samples, batches 128,1024, a 1-epoch lenet
#                        filtered with 300 t-SNE steps
#     -- ARGS            more dbs-agent options for every run
# Writes OUTDIR/{kept,random}.json and OUTDIR/filter.html (the filter and its report; kept when
# they exist), OUTDIR/runs/RUN.*, OUTDIR/filtering.jsonl (one record per run) and
# OUTDIR/filtering.html. Re-running skips what is done. NP=3 changes the ranks.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/study_common.bash"

build=build data=/usr/share/datasets/fashion-mnist weights="" wmodel=cnn wepochs=5 epochs=6 warmup=2
batches=128,2048,8192 seeds=1 train_limit=0 test_limit=0 out="" quick=0
extra=()
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --data) data=$2; shift 2 ;;
    --weights) weights=$2; shift 2 ;;
    --weights-model) wmodel=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --batches) batches=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --train-limit) train_limit=$2; shift 2 ;;
    --quick) quick=1 epochs=2 train_limit=2048 test_limit=500 batches=128,1024 wmodel=lenet
             wepochs=1; shift ;;
    --) shift; extra=("$@"); break ;;
    *) study_arg filtering.sh "$1"; shift ;;  # --help, an unknown option or OUTDIR
  esac
done
study_init filtering.sh "$build" "$data"

# 1. The weights (unless given) and the filter with its random control.
if [ -z "$weights" ]; then
  weights=$out/$wmodel.bin
  if [ ! -s "$weights" ]; then
    train=(--model "$wmodel" --epochs "$wepochs")
    echo "filtering.sh: training $weights: ${train[*]}" >&2
    "${MPIRUN[@]}" -np "$NP" "$AGENT" --data "$data" --no-progress --threads 1 \
      --train-limit "$train_limit" "${train[@]}" --save-weights "$weights" \
      --summary "$out/weights.summary.json" >"$out/weights.log" 2>&1 ||
      study_die "training the weights failed; see $out/weights.log"
  fi
fi
[ -r "$weights" ] || study_die "no weights file $weights"
if [ ! -s "$out/kept.json" ] || [ ! -s "$out/random.json" ]; then
  filter=()
  [ "$quick" = 1 ] && filter=(--perplexity 20 --iterations 300)
  echo "filtering.sh: dbs-agent filter --weights $weights --model $wmodel ${filter[*]}" >&2
  "${MPIRUN[@]}" -np "$NP" "$AGENT" filter --data "$data" --weights "$weights" --model "$wmodel" \
    --train-limit "$train_limit" "${filter[@]}" --out "$out/kept.json" \
    --random-control "$out/random.json" --report "$out/filter.html" >"$out/filter.log" 2>&1 ||
    study_die "dbs-agent filter failed; see $out/filter.log"
fi

# 2. The runs: the same settings for the three data sets at each batch.
runs=()
for seed in ${seeds//,/ }; do
  for b in ${batches//,/ }; do
    recipe=(--lr-scaling linear)
    [ "$b" -gt 128 ] && recipe+=(--warmup-epochs "$warmup")
    for kind in full filtered random; do
      subset=()
      [ "$kind" = filtered ] && subset=(--train-subset "$out/kept.json")
      [ "$kind" = random ] && subset=(--train-subset "$out/random.json")
      name="$kind-b$b-s$seed"
      study_run "$out" "$name" filtering "$kind" --data "$data" --model lenet --threads 1 \
        --policy dbs --wait sleep --optimizer adam --lr 0.001 --base-batch 128 --epochs "$epochs" \
        --train-limit "$train_limit" --test-limit "$test_limit" --batch "$b" "${recipe[@]}" \
        --seed "$seed" "${subset[@]}" "${extra[@]}"
      runs+=("$name")
    done
  done
done
for r in "${runs[@]}"; do cat "$out/runs/$r.jsonl"; done >"$out/filtering.jsonl"
echo "filtering.sh: ${#runs[@]} runs in $out/filtering.jsonl; the page is $out/filtering.html" >&2
"$LAB" study report --in "$out/filtering.jsonl" --html "$out/filtering.html"
