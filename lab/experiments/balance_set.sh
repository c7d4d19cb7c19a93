#!/usr/bin/env bash
# The 2-rank balance set in one command: N runs of the quota case (rank 1 held to 33% of a core
# by a cgroup quota) and N of the sleep case (rank 1 slowed x3 by sleep), alternated so that the
# machine's drift falls on both, each with lab/experiments/balance_quota.sh's settings (cnn,
# 2 ranks x 1 thread, 6,000 samples, global batch 256, 5 epochs, static, dbs-rate and dbs, every
# run bracketed by stand-alone rounds); then the tally against the targets (balance_set.py).
#   lab/experiments/balance_set.sh [BUILD_DIR] [--sets N] [--cases quota,sleep] [--out DIR]
#       [--quota SPEC] [--sleep SPEC] [-- extra dbs-lab balance options for every run]
# --quota SPEC is the quota case's --quota (default 1=0.33), --sleep SPEC the sleep case's
# --disturb (default rank=1,factor=3). Each run leaves in DIR (default out/balance-set-<time>;
# an existing DIR must hold no results) CASE<i>.json (dbs-lab balance's JSON, written when the
# run has finished), CASE<i>.err (its stderr, with dbs-lab balance's own summary) and CASE<i>/ (the
# runs' traces). The quota case needs root and writable cgroups, as balance_quota.sh.
# lab/experiments/balance_set.py DIR prints the tally again from the files.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
me=balance_set.sh
die() { echo "$me: $*" >&2; exit 2; }

build=build
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then build=$1; shift; fi
sets=3 cases=quota,sleep out="" quota_spec=1=0.33 sleep_spec=rank=1,factor=3
while [ $# -gt 0 ]; do
  case $1 in
    --sets) [ $# -ge 2 ] || die "--sets needs a value"; sets=$2; shift 2 ;;
    --cases) [ $# -ge 2 ] || die "--cases needs a value"; cases=$2; shift 2 ;;
    --out) [ $# -ge 2 ] || die "--out needs a value"; out=$2; shift 2 ;;
    --quota) [ $# -ge 2 ] || die "--quota needs a value"; quota_spec=$2; shift 2 ;;
    --sleep) [ $# -ge 2 ] || die "--sleep needs a value"; sleep_spec=$2; shift 2 ;;
    --) shift; break ;;
    *) die "unknown option '$1' (options for dbs-lab balance go after --)" ;;
  esac
done
[[ $sets =~ ^[1-9][0-9]*$ ]] || die "--sets '$sets': expected a whole number >= 1"
case_list=()
IFS=, read -r -a given <<<"$cases"
for c in "${given[@]}"; do
  case $c in quota | sleep) case_list+=("$c") ;; *) die "--cases '$cases': '$c' is not quota or sleep" ;; esac
done
[ ${#case_list[@]} -gt 0 ] || die "--cases '$cases': no case"
for a in "$@"; do
  case $a in
    --quota | --quota=* | --disturb | --disturb=*) die "'$a' after --: the cases set it (use --quota SPEC or --sleep SPEC)" ;;
    --trace-dir | --trace-dir=*) die "'$a' after --: each run's traces go to DIR/CASE<i>/" ;;
  esac
done
case $build in /*) ;; *) build=$root/$build ;; esac  # relative to the source root
[ -x "$build/lab/dbs-lab" ] || die "no $build/lab/dbs-lab (build first)"
[ -n "$out" ] || out=out/balance-set-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out" || die "--out '$out': cannot create it"
if compgen -G "$out/*.json" >/dev/null; then die "--out '$out' already holds results: choose another"; fi

failed=0
# Interrupted: the run in progress leaves no partial JSON (balance_quota.sh removes its cgroups).
trap 'rm -f "$out"/*.json.part; echo "$me: interrupted; finished runs are in $out" >&2; exit 130' INT TERM
for ((i = 1; i <= sets; i++)); do
  for c in "${case_list[@]}"; do
    if [ "$c" = quota ]; then spec=(--quota "$quota_spec" --disturb none); else spec=(--quota none --disturb "$sleep_spec"); fi
    echo "$me: $c run $i of $sets ($(date +%H:%M:%S))" >&2
    rc=0
    "$here/balance_quota.sh" "$build" -- "${spec[@]}" --trace-dir "$out/$c$i" "$@" \
      >"$out/$c$i.json.part" 2>"$out/$c$i.err" || rc=$?
    if [ "$rc" -ne 0 ]; then
      echo "$me: $c run $i failed (exit $rc); its stderr, $out/$c$i.err, ends:" >&2
      tail -n 5 "$out/$c$i.err" >&2
      rm -f "$out/$c$i.json.part"
      failed=1
      break 2
    fi
    mv "$out/$c$i.json.part" "$out/$c$i.json"
  done
done
compgen -G "$out/*.json" >/dev/null && python3 "$here/balance_set.py" "$out"
echo "$me: results in $out" >&2
exit "$failed"
