#!/usr/bin/env bash
# A study on the cluster test bed (tests/cluster/cluster.sh): per-epoch wall time of `static`
# and `dbs` on nodes of CPU quotas 1.0 / 0.5 / 0.25 against the ideal N / sum(v_i), where v_i is
# node i's stand-alone throughput under its quota, measured alone on the node. Prints a
# Markdown table.
#   lab/experiments/cluster_heterogeneity.sh [dbs-agent options...]   (default: cnn, 768 samples)
# DBS_POLICIES (default "static dbs") and DBS_EPOCHS (5) choose the runs; DBS_KEEP=DIR keeps
# each run's summary and trace (POLICY.json, POLICY.trace.jsonl) there; DBS_RECORD=FILE
# appends the run's record (study "cluster-bed", the figures docs/results/cluster-bed.md
# tabulates, with the date and commit) to FILE, DBS_RUN=N numbers it. A `--disturb
# rank=R,...` among the options slows node R+1's stand-alone run as well (there it is rank 0,
# disturbed from its first epoch to its last, as in dbs-lab balance's stand-alone runs), so
# that the ideal is what the disturbed nodes can do; e.g. the sleep case on full-core nodes:
#   DBS_CLUSTER_QUOTAS=1.0 lab/experiments/cluster_heterogeneity.sh --disturb rank=1,factor=2 \
#     --disturb rank=2,factor=4
# The cluster test bed and its helpers (bring it up, fail, $BUILD) are the cluster tests'.
source "$(dirname "$0")/../../tests/cluster/lib/test.bash"
test_cluster_up >/dev/null
common=(--model cnn --batch 128 --train-limit 768 --test-limit 128 --seed 1 --threads 1 "$@")
EPOCHS=${DBS_EPOCHS:-5}
echo "machine load at start: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
# alone_args R OPTIONS...: OPTIONS for rank R's stand-alone run, one per line: the --disturb
# specs of rank R as rank 0's, active throughout; those of other ranks dropped.
alone_args() {
  python3 - "$@" <<'PY'
import sys
rank, args, out, i = sys.argv[1], sys.argv[2:], [], 0
while i < len(args):
    a = args[i]
    if a == "--disturb" or a.startswith("--disturb="):
        spec = a.split("=", 1)[1] if a != "--disturb" else (args[i + 1] if i + 1 < len(args) else "")
        i += 1 if a != "--disturb" else 2
        kv = [item.split("=", 1) for item in spec.split(",")]
        if any(len(x) != 2 for x in kv):
            out += ["--disturb", spec]  # malformed: the agent names it
        elif dict(kv).get("rank") == rank:
            out += ["--disturb", ",".join("=".join(x) for x in [["rank", "0"]] +
                                           [x for x in kv if x[0] not in ("rank", "from", "to")])]
        continue
    out.append(a)
    i += 1
print("\n".join(out))
PY
}
v=()
for k in $(seq "$NODES"); do
  out=$DIR/local/alone$k
  mapfile -t alone < <(alone_args "$((k - 1))" "${common[@]}")
  srun -N1 -w "node$k" --mpi=pmix "$AGENT" "${alone[@]}" --epochs 2 --policy static \
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
quotas=() args=()
for k in $(seq "$NODES"); do quotas+=("$(cluster_quota_of "$k")"); done
for a in "$@"; do args+=("$(printf %q "$a")"); done
exchange="overlap (default across hosts)"
[[ " $* " == *" --no-overlap "* ]] && exchange=plain
DBS_QUOTAS=$(IFS=/; echo "${quotas[*]}") DBS_RATES=$RATES DBS_EXCHANGE=$exchange \
  DBS_COMMAND="DBS_POLICIES='${POLICIES[*]}' lab/experiments/cluster_heterogeneity.sh ${args[*]}" \
  python3 - "$(IFS=,; echo "${POLICIES[*]}")" "$DIR" "${v[@]}" <<'PY'
import json, os, re, sys
sys.path.insert(0, os.path.join(os.environ["DBS_ROOT"], "bench"))
import records  # the date and commit a record carries, as every study's
policies, d = sys.argv[1].split(","), sys.argv[2]
runs = [json.load(open(f"{d}/{p}.json")) for p in policies]
v = [float(x) for x in sys.argv[3:]]
record = {"study": "cluster-bed", "date": records.now_utc(), "commit": records.commit(),
          # "quotas 1.0/0.5/0.25, 1 Gbit/s" (tc's "1gbit" as the page writes it)
          "case": f"quotas {os.environ['DBS_QUOTAS']}, " + re.sub(
              r"(\d+)([gmk])bit", lambda m: f"{m[1]} {m[2].upper()}bit/s", os.environ["DBS_RATES"]),
          # the agent sets Open MPI's TCP eager limit to 4 MiB unless the environment sets it
          "exchange": os.environ["DBS_EXCHANGE"] + ", eager limit " + (
              os.environ.get("OMPI_MCA_btl_tcp_eager_limit", "") + " bytes"
              if os.environ.get("OMPI_MCA_btl_tcp_eager_limit") else "4 MiB"),
          "standalone_img_s": [round(x) for x in v], "command": os.environ["DBS_COMMAND"]}
if os.environ.get("DBS_RUN"):
    record["run"] = int(os.environ["DBS_RUN"])
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
record["ideal_s"] = round(ideal, 2)
record["ratio_to_ideal"] = {p: round(sum(e["wall_s"] for e in s) / len(s) / ideal, 2)
                            for p, s in zip(policies, steady) if s}
# Inside each run (the trace's timing and rank records): how busy each node was in the steady
# epochs, and the steady wall time against the best split for the speeds the nodes had in the run
# (N / sum_i samples_i / busy_s_i per epoch; see dbs-lab balance's busy_ideal_s).
for p in policies:
    recs = [json.loads(l) for l in open(f"{d}/{p}.trace.jsonl")]
    busy = {(r["epoch"], r["rank"]): r["busy_s"] for r in recs if r["type"] == "timing" and "busy_s" in r}
    samples = {(r["epoch"], r["rank"]): r["samples"] for r in recs if r["type"] == "rank"}
    wall = {r["epoch"]: r["wall_s"] for r in recs if r["type"] == "eval" and r["epoch"] >= 3}
    if not wall or not busy:
        continue
    world = 1 + max(k[1] for k in busy)
    best = sum(n / sum(samples[e, i] / busy[e, i] for i in range(world)) for e in wall)
    frac = [sum(busy[e, i] for e in wall) / sum(wall.values()) for i in range(world)]
    print(f"{p}: steady busy per node {', '.join(f'{x:.3f}' for x in frac)}; "
          f"{sum(wall.values()) / best:.3f}x the best split for the speeds in the run")
    if p != "dbs":
        continue
    node1 = [r["allreduce"]["wall_s"] / r["steps"] for r in recs
             if r["type"] == "timing" and r["rank"] == 0 and r["epoch"] in wall]
    epochs = [runs[policies.index(p)]["epochs"][e - 1] for e in sorted(wall)]
    walls = [e["wall_s"] for e in epochs]
    plans = []  # [plan, epochs in a row]
    for plan in ("/".join(map(str, e["batch"])) for e in epochs):
        if plans and plans[-1][0] == plan:
            plans[-1][1] += 1
        else:
            plans.append([plan, 1])
    record.update(dbs_steady_epoch_s=f"{min(walls):.2f}-{max(walls):.2f}",
                  dbs_plans=", ".join(f"{b} x{k}" if k > 1 else b for b, k in plans),
                  dbs_ratio_to_best_split=round(sum(wall.values()) / best, 3),
                  busy=[round(x, 2) for x in frac],
                  node1_allreduce_ms_per_step=round(1000 * sum(node1) / len(node1), 1))
if os.environ.get("DBS_RECORD"):
    with open(os.environ["DBS_RECORD"], "a") as f:
        f.write(json.dumps(record) + "\n")
    print(f"record appended to {os.environ['DBS_RECORD']}")
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
