#!/usr/bin/env bash
# Cluster test 6 (a measurement, not in the test suite): per-epoch wall time of `static` and
# `dbs` on nodes of CPU quotas 1.0 / 0.5 / 0.25 against the ideal N / sum(v_i), where v_i is node
# i's stand-alone throughput under its quota, measured alone on the node. Prints a Markdown table.
#   tests/cluster/measure_heterogeneity.sh [dbs-agent options...]   (default: cnn, 768 samples)
# DBS_POLICIES (default "static dbs") and DBS_EPOCHS (5) choose the runs; DBS_KEEP=DIR keeps
# each run's summary and trace (POLICY.json, POLICY.trace.jsonl) there.
source "$(dirname "$0")/lib/test.bash"
test_cluster_up >/dev/null
common=(--model cnn --batch 128 --train-limit 768 --test-limit 128 --seed 1 --threads 1 "$@")
EPOCHS=${DBS_EPOCHS:-5}
echo "machine load at start: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
v=()
for k in $(seq "$NODES"); do
  out=$DIR/local/alone$k
  srun -N1 -w "node$k" --mpi=pmix "$AGENT" "${common[@]}" --epochs 2 --policy static \
    --summary "$out/summary.json" >"$DIR/alone$k.log" 2>&1 || { cat "$DIR/alone$k.log"; fail "node$k alone"; }
  v+=("$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["epochs"][-1]["images_per_s"])' \
    "$(node_local "$k" "$out")/summary.json")")
  echo "node$k alone (quota $(cluster_quota_of "$k")): ${v[-1]} img/s"
done
read -ra POLICIES <<<"${DBS_POLICIES:-static dbs}"
for policy in "${POLICIES[@]}"; do
  DBS_OUT=$DIR/local/$policy submit "$DIR/$policy.log" -N "$NODES" -- "${common[@]}" \
    --epochs "$EPOCHS" --policy "$policy" || { cat "$DIR/$policy.log"; fail "$policy job"; }
  cp "$(node_local 1 "$DIR/local/$policy")/summary.json" "$DIR/$policy.json"
  cp "$(node_local 1 "$DIR/local/$policy")/trace.jsonl" "$DIR/$policy.trace.jsonl"
done
echo "machine load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -n "${DBS_KEEP:-}" ]; then
  mkdir -p "$DBS_KEEP"
  for p in "${POLICIES[@]}"; do cp "$DIR/$p.json" "$DIR/$p.trace.jsonl" "$DBS_KEEP/"; done
fi
python3 - "$(IFS=,; echo "${POLICIES[*]}")" "$DIR" "${v[@]}" <<'PY'
import json, sys
policies, d = sys.argv[1].split(","), sys.argv[2]
runs = [json.load(open(f"{d}/{p}.json")) for p in policies]
v = [float(x) for x in sys.argv[3:]]
n = runs[0]["config"]["samples_per_epoch"]
ideal = n / sum(v)
print(f"\nN = {n}, stand-alone v_i = {', '.join(f'{x:.1f}' for x in v)} img/s, ideal epoch N / sum v_i = {ideal:.2f} s\n")
print("| epoch | ideal s | " + " | ".join(f"{p} wall s | {p} batch | {p} / ideal" for p in policies) + " |")
print("|---|---|" + "---|---|---|" * len(policies))
for i, first in enumerate(runs[0]["epochs"]):
    cells = []
    for r in runs:
        e = r["epochs"][i]
        cells += [f"{e['wall_s']:.2f}", ",".join(map(str, e["batch"])), f"{e['wall_s'] / ideal:.2f}"]
    print(f"| {first['epoch']} | {ideal:.2f} | " + " | ".join(cells) + " |")
steady = [r["epochs"][2:] for r in runs]
print("\nsteady (epochs 3 on): " + ", ".join(
    f"{p} {sum(e['wall_s'] for e in s) / len(s) / ideal:.2f}x ideal" for p, s in zip(policies, steady) if s))
PY
for p in "${POLICIES[@]}"; do
  echo "$p: cpu records (cumulative throttling) of the last epoch:"
  python3 -c '
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
cpu = [r for r in recs if r["type"] == "cpu"]
last = max(r["epoch"] for r in cpu)
for r in cpu:
    if r["epoch"] == last: print("  ", r)' "$DIR/$p.trace.jsonl"
done
