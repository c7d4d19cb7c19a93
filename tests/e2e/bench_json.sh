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
# allreduce on 2 ranks: MPI's, the ring, and with --wait the training's exchanges (--exchange)
# per wait mode (a sum checked inside every call), with their CPU per call.
"${MPIRUN[@]}" -np 2 "$BENCH" allreduce --sizes 16,4097 --reps 3 --wait spin,sleep \
  --exchange allreduce,ring,sharded,overlap,allgather >"$TMP/allreduce.json" 2>"$TMP/allreduce.err" ||
  { cat "$TMP/allreduce.err"; fail "allreduce failed"; }
python3 - "$TMP/allreduce.json" <<'PY' || fail "allreduce output"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ranks"] == 2 and [s["floats"] for s in d["sizes"]] == [16, 4097], d
for s in d["sizes"]:
    c = s["communicator"]
    assert sorted(c) == ["allgather", "allreduce", "overlap", "ring", "sharded"], s
    assert all(sorted(c[e]) == ["sleep", "spin"] for e in c), s
    for m in [s["mpi"], s["ring"]] + [c[e][w] for e in c for w in c[e]]:
        assert 0 < m["min_us"] <= m["median_us"] and m["cpu_median_us"] > 0, s
PY
expect_fail "--wait: yield not in {spin,sleep,auto}" "$BENCH" allreduce --wait yield
expect_fail "--exchange: tree not in {allreduce,ring,sharded,overlap,allgather}" "$BENCH" allreduce --wait spin --exchange tree
expect_fail "--exchange requires --wait" "$BENCH" allreduce --exchange ring
expect_fail "--sizes: must be in [1, 2.14748e+09], got 0" "$BENCH" allreduce --sizes 16,0
# Out-of-range numbers get a short message (CLI11's own names the type's whole range).
expect_fail "--warmup: must be >= 0, got -1" "$BENCH" train --warmup -1
echo "bench JSON ok"
