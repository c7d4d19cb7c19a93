# Helpers of the training studies (recipe.sh, filtering.sh); sourced, not run.
#   study_arg NAME ARG           the option parser's last case: --help (the script's header),
#                                an unknown option (exit 2) or the one OUTDIR (sets out)
#   study_init NAME BUILD DATA   checks OUTDIR was given, the build, mpirun and the dataset;
#                                sets AGENT, LAB, NP (default 2); makes OUTDIR
#   study_run OUT RUN STUDY DATA_KIND [dbs-agent options...]
#       one mpirun job of $NP ranks; its summary, metrics and log in OUT/runs/RUN.*, its record
#       in OUT/runs/RUN.jsonl. A run whose record exists is skipped (re-running a study resumes
#       it; delete OUT/runs to start afresh).
set -euo pipefail

study_die() { echo "$STUDY_NAME: error: $*" >&2; exit 1; }

study_arg() {
  case $2 in
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "$1: error: unknown option $2 (see --help)" >&2; exit 2 ;;
    *) [ -z "${out:-}" ] || { echo "$1: error: one OUTDIR, got $out and $2" >&2; exit 2; }
       out=$2 ;;
  esac
}

study_init() {
  STUDY_NAME=$1
  local build=$2 data=$3
  [ -n "${out:-}" ] || { echo "$1: error: no OUTDIR (see --help)" >&2; exit 2; }
  NP=${NP:-2}
  AGENT=$build/agents/dbs-agent
  LAB=$build/lab/dbs-lab
  [ -x "$AGENT" ] || study_die "no $AGENT: build first (source agents/setup.sh; dbs_build build)"
  [ -x "$LAB" ] || study_die "no $LAB: build with -Dlab=true"
  command -v mpirun >/dev/null || study_die "mpirun not found (apt-get install openmpi-bin)"
  local f
  for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz \
    t10k-labels-idx1-ubyte.gz; do
    [ -r "$data/$f" ] || study_die "no Fashion-MNIST file $data/$f (apt-get install dataset-fashion-mnist, or --data DIR)"
  done
  MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none)
  mkdir -p "$out"
}

study_run() {
  local out=$1 run=$2 study=$3 kind=$4
  shift 4
  local base=$out/runs/$run
  if [ -s "$base.jsonl" ]; then
    echo "$STUDY_NAME: $run: recorded already, skipped" >&2
    return 0
  fi
  mkdir -p "$out/runs"
  rm -f "$base.summary.json" "$base.metrics.jsonl" "$base.jsonl" "$base.jsonl.tmp"
  echo "$STUDY_NAME: $run: $*" >&2
  local t0 t1 rc=0
  t0=$(date +%s.%N)
  "${MPIRUN[@]}" -np "$NP" "$AGENT" --no-progress --summary "$base.summary.json" \
    --metrics "$base.metrics.jsonl" "$@" >"$base.log" 2>&1 || rc=$?
  t1=$(date +%s.%N)
  [ "$rc" -eq 0 ] || study_die "$run failed (exit $rc); the last lines of $base.log:
$(tail -n 5 "$base.log")"
  grep -E '^final:' "$base.log" | sed "s/^/$STUDY_NAME: $run: /" >&2 || true
  "$LAB" study record --study "$study" --data "$kind" --summary "$base.summary.json" \
    --metrics "$base.metrics.jsonl" --wall-s "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')" \
    --out "$base.jsonl.tmp" -- "$@"
  mv "$base.jsonl.tmp" "$base.jsonl"
}
