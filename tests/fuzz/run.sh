#!/usr/bin/env bash
# Fuzzing of the daemon: builds build-fuzz with clang++ and -Dfuzz=true under
# ASan + UBSan, runs every libFuzzer target of tests/fuzz at once for DBS_FUZZ_SECONDS seconds
# (default 300) over a scratch copy of its corpus in tests/fuzz/corpus/<target>, prints per
# target the executions, executions per second and coverage (edges, features), then the total.
# Exits non-zero on any crash, leak, timeout or out-of-memory (libFuzzer writes the input to
# build-fuzz/fuzz-out/<target>/). Usage: tests/fuzz/run.sh [SECONDS]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
seconds=${1:-${DBS_FUZZ_SECONDS:-300}}
source "$root/agents/setup.sh"
dbs_setup_packages
missing=()
for p in clang libfuzzer-14-dev libclang-rt-14-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "fuzz: installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
build=$root/build-fuzz
if [ ! -f "$build/build.ninja" ]; then
  CXX=clang++ CC=clang meson setup "$build" "$root" -Dfuzz=true -Dtests=false -Dbenchmarks=false \
    -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized \
    -Dportable_simd=disabled >"$build.setup.log" 2>&1 || { cat "$build.setup.log" >&2; exit 1; }
fi
targets=(decode session state)
ninja -C "$build" -j2 "${targets[@]/#/tests/fuzz/fuzz-}" | tail -n 2
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
# The targets run at once, each for $seconds seconds.
run_target() {
  local t=$1 out=$build/fuzz-out/$1
  local rc=0
  rm -rf "$out" && mkdir -p "$out/corpus" "$out/tmp"
  TMPDIR=$out/tmp "$build/tests/fuzz/fuzz-$t" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$out/" "$out/corpus" \
    "$root/tests/fuzz/corpus/$t" >"$out/log" 2>&1 || rc=$?
  rm -rf "$out/tmp"  # what the target made there (state_fuzz's scratch directory)
  return $rc
}
declare -A pid
for t in "${targets[@]}"; do
  run_target "$t" &
  pid[$t]=$!
done
total=0
status=0
for t in "${targets[@]}"; do
  rc=0
  wait "${pid[$t]}" || rc=$?
  log=$build/fuzz-out/$t/log
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
  cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -n 1)
  echo "fuzz-$t: ${execs:-0} executions, ${rate:-0} exec/s, ${cov:-no coverage line}, exit $rc"
  total=$((total + ${execs:-0}))
  if [ "$rc" -ne 0 ]; then
    status=1
    grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$log" | head -n 20 >&2 || true
  fi
done
echo "fuzz: $total executions in total, $([ $status -eq 0 ] && echo "0 crashes, 0 leaks, 0 timeouts" || echo FAILED)"
exit $status
