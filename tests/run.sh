#!/usr/bin/env bash
# The test command: installs what is missing, builds incrementally, runs `meson test` and ends
# with one line "N passed, N failed" (", N skipped" when any), counting meson tests; exits
# non-zero on any failure. Every test is a meson test(); this script only picks the suites.
set -uo pipefail

usage() {
  cat <<'EOF'
usage: tests/run.sh [--quick | --sanitize | --fuzz | --soak | --bench [OPTIONS] | --help]
  (none)      install, build build/, run the suites unit, mpi, e2e, python (the dbs package
              with PyTorch), lab (dbs-lab's studies and report writers), docs, bench (the
              regression gate) and cluster
  --quick     the unit suite only
  --sanitize  the unit suite built with address + undefined sanitizers in build-sanitize/
  --fuzz      tests/fuzz/run.sh: the fuzz targets for a bounded time, counted as one test
  --soak      tests/soak/soak.py: the daemon under 5,000 hostile and busy connections while a
              2-rank job trains 20 epochs, three times: plain TCP with tokens, with tokens and
              munge credentials, and TLS (about 2-4 minutes), counted as one test
  --bench     build build/, then bench/run.py: the headline benchmarks (engine, daemon load,
              exchange, filter, replay; about 2 minutes on an idle machine), each figure printed
              beside the committed record in docs/results/ with their ratio, changes beyond the
              tolerance marked; records in out/bench/. OPTIONS go to bench/run.py: --runs N,
              --only LIST, --save (append the records, regenerate the tables), --help
  --help      this text
Single tests: meson test -C build --list, then meson test -C build NAME (or --suite SUITE);
meson test -C build --suite quickstart runs the README's quick start as written (about 7 min).
EOF
}

mode=all bench_args=()
while [ $# -gt 0 ]; do
  arg=$1
  shift
  case $arg in
    -h | --help) usage; exit 0 ;;
    --quick | --sanitize | --fuzz | --soak | --bench)
      if [ "$mode" != all ]; then
        echo "tests/run.sh: give one of --quick, --sanitize, --fuzz, --soak, --bench" >&2
        usage >&2
        exit 2
      fi
      mode=${arg#--}
      if [ "$mode" = bench ]; then bench_args=("$@"); break; fi ;;
    *) echo "tests/run.sh: unknown option '$arg'" >&2; usage >&2; exit 2 ;;
  esac
done

source "$(dirname "$0")/../agents/setup.sh"
cd "$DBS_ROOT"
dbs_setup_packages || exit 1

closing() {  # closing PASSED FAILED SKIPPED: the last line, and the exit status
  if [ "$3" -gt 0 ]; then echo "$1 passed, $2 failed, $3 skipped"; else echo "$1 passed, $2 failed"; fi
  [ "$2" -eq 0 ]
}

if [ "$mode" = fuzz ]; then
  if [ ! -f tests/fuzz/run.sh ]; then
    echo "tests/run.sh: tests/fuzz/run.sh is missing, there is nothing to fuzz" >&2
    closing 0 1 0
    exit
  fi
  if bash tests/fuzz/run.sh; then closing 1 0 0; else closing 0 1 0; fi
  exit
fi

dir=build suites=(unit mpi e2e python lab docs bench cluster) setup=()
if [ "$mode" = bench ]; then
  for a in "${bench_args[@]}"; do  # its help needs no build
    case $a in -h | --help) exec /usr/bin/python3 bench/run.py --help ;; esac
  done
  dbs_build build || { closing 0 1 0; exit; }
  if /usr/bin/python3 bench/run.py "${bench_args[@]}"; then closing 1 0 0; else closing 0 1 0; fi
  exit
fi
if [ "$mode" = soak ]; then
  dbs_build build || { closing 0 1 0; exit; }
  if python3 tests/soak/soak.py --build build; then closing 1 0 0; else closing 0 1 0; fi
  exit
fi
case $mode in
  quick) suites=(unit) ;;
  sanitize)
    dir=build-sanitize suites=(unit)
    setup=(-Db_sanitize=address,undefined -Dbuildtype=debugoptimized -Dbenchmarks=false -Dlab=false) ;;
esac
dbs_build "$dir" "${setup[@]}" || { closing 0 1 0; exit; }

# Only the suites that have tests in this build (meson refuses a suite it does not know).
present=$(meson introspect "$dir" --tests |
  python3 -c "import json,sys; print(*{s.split(':')[-1] for t in json.load(sys.stdin) for s in t['suite']})")
args=()
for s in "${suites[@]}"; do
  if [[ " $present " == *" $s "* ]]; then args+=(--suite "$s"); else echo "suite $s: no tests in $dir"; fi
done
rm -f "$dir/meson-logs/testlog.json"
meson_rc=0
[ ${#args[@]} -gt 0 ] && { meson test -C "$dir" --no-rebuild --print-errorlogs "${args[@]}" || meson_rc=$?; }

# The closing line from meson's own record of this run.
read -r passed failed skipped < <(python3 - "$dir/meson-logs/testlog.json" <<'PY'
import json, os, sys
counts = {"ok": 0, "fail": 0, "skip": 0}
path = sys.argv[1]
for line in (open(path) if os.path.exists(path) else []):
    test = json.loads(line)
    result = test["result"]
    counts["ok" if result in ("OK", "EXPECTEDFAIL") else "skip" if result == "SKIP" else "fail"] += 1
    if result == "SKIP":  # a skipped test says why on its last line
        why = (test.get("stdout") or "").strip().splitlines()
        print(f"skipped {test['name']}: {why[-1] if why else 'no reason given'}", file=sys.stderr)
print(counts["ok"], counts["fail"], counts["skip"])
PY
)
[ "$meson_rc" -ne 0 ] && [ "${failed:-0}" -eq 0 ] && failed=1  # meson failed before any test did
closing "${passed:-0}" "${failed:-1}" "${skipped:-0}"
