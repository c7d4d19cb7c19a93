# dbs-scheduler bed: a cluster spec's shape on the cluster test bed, as shell settings that the
# bed (tests/cluster/cluster.sh) and its study read: a node per rank, quotas in proportion to the
# node types' throughputs, link rates from the bandwidths, the agent's options from the spec's
# samples, batch, settings and disturbances; comment lines name what a real node cannot carry;
# a node type too slow for the bed's smallest quota, a spec that cannot be read and a bad
# --cores are refused, naming them.
source "$(dirname "$0")/common.bash"
"$SCHED" bed traces/bed-3.json >"$TMP/bed.sh" 2>"$TMP/err" || fail "bed: $(cat "$TMP/err")"
cat "$TMP/bed.sh"
( export DBS_POLICIES=dbs  # a spec without a policy leaves the study's own
  source "$TMP/bed.sh"
  [ "$DBS_CLUSTER_NODES" = 3 ] && [ "$DBS_CLUSTER_QUOTAS" = 1,0.5,0.25 ] &&
    [ "$DBS_CLUSTER_RATES" = 1gbit ] && [ "$DBS_EPOCHS" = 5 ] && [ -z "${DBS_POLICIES:-}" ] &&
    [ "$DBS_AGENT_OPTIONS" = "--epochs 5 --train-limit 768 --batch 128 --disturb rank=2,factor=2,from=3.5,mode=sleep" ]
) || fail "the bed settings of traces/bed-3.json are not the spec's"
! grep -q "not carried over" "$TMP/bed.sh" || fail "traces/bed-3.json has nothing a node cannot carry"

python3 - "$TMP" <<'PY'
import json, sys
spec = {"epochs": 2, "policy": "fixed:40,40,48", "min_gain": 0.05, "step_noise": 0.05,
        "network": [{"rank": 2, "bandwidth": 1e7, "latency_s": 1e-3}],
        "nodes": [{"name": "big", "count": 2, "throughput": 900, "alpha_s": 0.01},
                  {"name": "small", "throughput": 300}]}
json.dump(spec, open(sys.argv[1] + "/two-types.json", "w"))
spec["nodes"][1]["throughput"] = 1
json.dump(spec, open(sys.argv[1] + "/tiny.json", "w"))
PY
"$SCHED" bed "$TMP/two-types.json" --cores 0.9 >"$TMP/two.sh" || fail "bed of two-types.json failed"
cat "$TMP/two.sh"
( source "$TMP/two.sh"
  [ "$DBS_CLUSTER_NODES" = 3 ] && [ "$DBS_CLUSTER_QUOTAS" = 0.9,0.9,0.3 ] &&
    [ "$DBS_CLUSTER_RATES" = 10gbit,10gbit,80mbit ] && [ "$DBS_EPOCHS" = 2 ] &&
    [ "$DBS_POLICIES" = "static fixed:40,40,48" ] &&
    [ "$DBS_AGENT_OPTIONS" = "--epochs 2 --train-limit 60000 --batch 128 --policy fixed:40,40,48 --min-gain 0.05" ]
) || fail "the bed settings of two-types.json are not the spec's"
grep -q "^#   node1-node2: nodes\[0\] 'big', quota 0.9$" "$TMP/two.sh" || fail "no line for the node type 'big'"
for what in alpha_s step_noise latency_s; do
  grep -q "^# not carried over: .*$what" "$TMP/two.sh" || fail "bed does not say that $what is not carried over"
done

expect_fail "$TMP/tiny.json: nodes[1] 'small' would get a CPU quota of 0.00111 cores" "$SCHED" bed "$TMP/tiny.json"
expect_fail "--cores" "$SCHED" bed traces/bed-3.json --cores 0
expect_fail "$TMP/none.json: cannot open spec" "$SCHED" bed "$TMP/none.json"
echo '{"epochs": 2, "speeds": [1, 0.5, 0.004]}' >"$TMP/speeds.json"
expect_fail "speeds[2] would get a CPU quota of 0.004 cores" "$SCHED" bed "$TMP/speeds.json"
"$SCHED" bed "$TMP/speeds.json" --cores 4 | grep -q "^export DBS_CLUSTER_QUOTAS=4,2,0.016$" ||
  fail "--cores 4 does not scale the quotas"
echo '{"epochs": 2, "speeds": [1, 0.5], "bandwith": 1e8}' >"$TMP/typo.json"
expect_fail "unknown field 'bandwith'" "$SCHED" bed "$TMP/typo.json"
echo "all bed checks passed"
