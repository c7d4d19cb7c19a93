# dbs-bench prints the documented JSON keys (figures are not judged here: benchmarks, not tests).
source "$(dirname "$0")/common.bash"
"$BENCH" train --model lenet --threads 1 --batch 32 --steps 2 --warmup 1 >"$TMP/train.json"
for k in images_per_s gflops peak_fraction; do
  json_get "$TMP/train.json" "d['$k'] > 0" | grep -qx True || fail "train: $k missing or not positive"
done
"$BENCH" peak --seconds 0.2 >"$TMP/peak.json"
json_get "$TMP/peak.json" "d['gflops_per_core'] > 0" | grep -qx True || fail "peak missing"
"$BENCH" kernels --model lenet --batch 16 --steps 1 >"$TMP/kernels.json"
json_get "$TMP/kernels.json" "len(d['layers']) > 3" | grep -qx True || fail "kernels: no layers"
echo "bench JSON ok"
