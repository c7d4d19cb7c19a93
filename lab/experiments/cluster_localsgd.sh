#!/usr/bin/env bash
# The local SGD study (docs/results/local-sgd.md) on the cluster test bed (tests/cluster/,
# root): three nodes held to 1.0, 0.5 and 0.25 cores, their links shaped to each rate of --rates
# (tbf), the CNN, started by Slurm. Per rate and seed four runs of --epochs epochs:
#   sync-static   the gradient exchanged every step, the equal split
#   sync-dbs      the gradient exchanged every step, dbs
#   every-static  models averaged every H steps (--every) after --after synchronous epochs, the
#                 equal split: PyTorch's post-local SGD, whose equal weights the equal split gives
#   every-dbs     the same under dbs: batches in proportion to speed, averages weighted by samples
# Before each rate's runs every node trains alone for 2 epochs: its stand-alone speed v_i, from
# which the compute-only ideal N / sum v_i. Each run appends one record to --out (JSONL: the
# run, its config, every epoch's wall time, test accuracy, averages and plan, the stand-alone
# speeds, the machine's load).
#   lab/experiments/cluster_localsgd.sh [--rates "100mbit 1gbit"] [--seeds "1 2"] [--epochs 8]
#       [--every 8] [--after 1] [--out FILE] [-- dbs-agent options]
#   lab/experiments/cluster_localsgd.sh --report FILE [--target 0.80]
# --report prints the results page's tables from the records (lab/experiments/local_sgd_report.py):
# per rate the time to --target test accuracy (training time, evaluation left out; mean over the
# seeds and their range), the steady epochs (those after the first averaging one) over the ideal,
# the accuracy after the last epoch, and every-dbs against sync-dbs and every-static. The
# dbs-agent options after -- replace the study's size (default --train-limit 6000 --test-limit
# 2000 --batch 256).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
rates="100mbit 1gbit" seeds="1 2" epochs=8 every=8 after=1 out= report= target=0.80
extra=()
while [ $# -gt 0 ]; do
  case $1 in
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    --rates|--seeds|--epochs|--every|--after|--out|--report|--target)
      [ $# -ge 2 ] || { echo "cluster_localsgd.sh: error: $1 needs a value" >&2; exit 2; }
      name=${1#--}
      printf -v "$name" '%s' "$2"
      shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "cluster_localsgd.sh: error: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

if [ -n "$report" ]; then
  exec python3 "$HERE/local_sgd_report.py" "$report" --target "$target"
fi

[ "$(id -u)" -eq 0 ] || { echo "cluster_localsgd.sh: error: the cluster bed needs root" >&2; exit 1; }
out=${out:-$ROOT/out/local-sgd.jsonl}
mkdir -p "$(dirname "$out")"
size=(--train-limit 6000 --test-limit 2000 --batch 256)
[ ${#extra[@]} -eq 0 ] || size=("${extra[@]}")
start=$SECONDS
for rate in $rates; do
  # One bed per rate: its shape includes the links' rate.
  (
    export DBS_CLUSTER_RATES=$rate
    source "$ROOT/tests/cluster/lib/test.bash"
    test_cluster_up >/dev/null
    common=(--model cnn --threads 1 --no-progress "${size[@]}")
    load0=$(cut -d' ' -f1-3 /proc/loadavg)
    alone=()
    for k in $(seq "$NODES"); do
      srun -N1 -w "node$k" --mpi=pmix "$AGENT" "${common[@]}" --epochs 2 --policy static \
        --summary "$DIR/local/alone$k/summary.json" >"$DIR/alone$k.log" 2>&1 ||
        { cat "$DIR/alone$k.log"; fail "node$k alone"; }
      alone+=("$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["epochs"][-1]["images_per_s"])' \
        "$(node_local "$k" "$DIR/local/alone$k")/summary.json")")
      echo "$rate: node$k alone (quota $(cluster_quota_of "$k")): ${alone[-1]} img/s" >&2
    done
    for seed in $seeds; do
      for run in sync-static sync-dbs every-static every-dbs; do
        policy=${run#*-}
        args=(--seed "$seed" --epochs "$epochs" --policy "$policy")
        [[ $run != every-* ]] || args+=(--average-every "$every" --average-after-epochs "$after")
        t0=$SECONDS
        DBS_OUT=$DIR/local/$run-$seed submit "$DIR/$run-$seed.log" -N "$NODES" -- "${common[@]}" \
          "${args[@]}" || { cat "$DIR/$run-$seed.log"; fail "$run seed $seed"; }
        python3 - "$(node_local 1 "$DIR/local/$run-$seed")/summary.json" "$rate" "$seed" "$run" \
          "$((SECONDS - t0))" "$load0" "$(git -C "$ROOT" rev-parse --short HEAD)" "${alone[@]}" \
          >>"$out" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
c = s["config"]
print(json.dumps({
    "study": "local-sgd", "rate": sys.argv[2], "seed": int(sys.argv[3]), "run": sys.argv[4],
    "policy": c["policy"], "average_every": c.get("average_every", 0),
    "average_after_epochs": c.get("average_after_epochs", 0), "samples": c["samples_per_epoch"],
    "global_batch": c["global_batch"], "model": c["model"], "overlap": c["overlap"],
    "alone_img_s": [float(x) for x in sys.argv[8:]], "job_wall_s": int(sys.argv[5]),
    "load_at_start": sys.argv[6], "commit": sys.argv[7],
    "epochs": [{k: e.get(k) for k in ("epoch", "wall_s", "test_acc", "train_loss", "batch",
                                       "averages", "busy")} for e in s["epochs"]]}))
PY
        echo "$rate: $run seed $seed: $((SECONDS - t0)) s" >&2
      done
    done
  )
done
echo "cluster_localsgd.sh: records in $out ($((SECONDS - start)) s)" >&2
"$0" --report "$out"
