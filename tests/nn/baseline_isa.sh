#!/usr/bin/env bash
# One binary for a mixed cluster: outside the AVX2 builds (namespaces fast_avx2 and EigenAvx2)
# no function of BINARY holds an AVX, FMA or AVX-512 instruction (VEX/EVEX encoded: mnemonics
# v..., other than the ancient verr/verw), so a CPU without AVX2 never meets one (the AVX2 code
# is chosen at start by CPU feature).
#   tests/nn/baseline_isa.sh BINARY [NATIVE]   (NATIVE: true when built with -Dnative=true)
set -euo pipefail
bin=$1
[ "${2:-false}" = true ] && { echo "skipped: built with -Dnative=true (for the build machine only)"; exit 77; }
command -v objdump >/dev/null || { echo "skipped: no objdump"; exit 77; }
report=$(objdump -d --no-show-raw-insn -C "$bin" |
  awk '/^[0-9a-f]+ <.*>:$/ { fn = $0; next } $2 ~ /^v/ && $2 !~ /^ver[rw]/ { n[fn]++ }
       END { for (f in n) print n[f], f }')
total=$(wc -l <<<"$report")
outside=$(grep -v "fast_avx2::\|EigenAvx2::" <<<"$report" | grep -v '^$' || true)
if [ -n "$outside" ]; then
  echo "FAIL: AVX instructions outside the AVX2 kernels of $bin:"
  head -n 20 <<<"$outside"
  exit 1
fi
echo "ok: $total function(s) hold AVX instructions, all in fast_avx2 / EigenAvx2"
