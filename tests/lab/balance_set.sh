# lab/experiments/balance_set.sh: the set's files, its tally against the runs' JSON, and what
# bad options, a failing run and bad files get (figures are not judged: studies, not tests).
source "$(dirname "$0")/../e2e/common.bash"
SET=lab/experiments/balance_set.sh
TALLY=lab/experiments/balance_set.py
set_fails() { local want=$1; shift; expect_fail "$want" "$SET" "$BUILD" "$@"; }  # before any run
set_fails "--sets '0': expected a whole number >= 1" --sets 0 --out "$TMP/x"
set_fails "--cases 'quota,slow': 'slow' is not quota or sleep" --cases quota,slow --out "$TMP/x"
set_fails "'--quota' after --: the cases set it" --out "$TMP/x" -- --quota 1=0.5
set_fails "'--trace-dir=t' after --" --out "$TMP/x" -- --trace-dir=t
set_fails "unknown option '--set'" --set 2
expect_fail "no /nonexistent/lab/dbs-lab (build first)" "$SET" /nonexistent --out "$TMP/x"
[ ! -e "$TMP/x" ] || fail "a refused set made its --out"
echo "balance_set.sh option errors ok"

# One set on a small lenet run: the sleep case always, the quota case where this machine lets us
# make CPU cgroups (root, cgroup v1's cpu controller).
CG=/sys/fs/cgroup/cpu
cases=sleep
if [ "$(id -u)" = 0 ] && [ -w "$CG/cgroup.procs" ] && [ -e "$CG/cpu.cfs_quota_us" ]; then
  cases=quota,sleep
else
  echo "skip: the quota case needs root and cgroup v1's cpu controller at $CG (not here)"
fi
small=(--model lenet --epochs 2 --steady-from 2 --batch 64 --train-limit 256 --test-limit 64 --solo-limit 128)
"$SET" "$BUILD" --sets 1 --cases "$cases" --quota 1=0.5 --out "$TMP/set" -- "${small[@]}" \
  >"$TMP/set.out" 2>"$TMP/set.err" || { cat "$TMP/set.err"; fail "balance_set.sh failed"; }
for c in ${cases//,/ }; do
  [ -s "$TMP/set/${c}1.json" ] && [ -s "$TMP/set/${c}1.err" ] && [ -s "$TMP/set/${c}1/dbs.jsonl" ] ||
    fail "$c: missing files: $(ls "$TMP/set")"
done
! compgen -G "$TMP/set/*.part" >/dev/null || fail "a .part file was left: $(ls "$TMP/set")"
# The tally's rows and counts, recomputed from the JSON.
python3 - "$TMP/set" "$TMP/set.out" "$cases" <<'PY' || fail "the tally does not match the JSON"
import json, re, sys
d, out, cases = sys.argv[1], open(sys.argv[2]).read(), sys.argv[3].split(",")
limits = {"quota": 1.10, "sleep": 1.05}
for case in cases:
    j = json.load(open("%s/%s1.json" % (d, case)))
    assert (j["quota"] == ["1=0.5"]) == (case == "quota") and (j["disturb"] == ["none"]) == (case == "quota"), j
    r = {x["run"]: x for x in j["runs"]}["dbs"]
    block = out.split("\n%s case (" % case)[1].split("\n\n")[0]
    row = re.search(r"^\s+1\s+(\S+)\s+(\S+)x \((\S+)%\)\s+(\S+)x \((\S+)%\)\s+(\S+)x\s+(\S+)x\s+(\d+)\s+(.*)$",
                    block, re.M)
    assert row, block
    g = row.groups()
    want = [r["steady_wall_s"] / r["steady_epochs"], r["steady_ratio_to_bracket"], 100 * r["bracket_drift"],
            r["steady_ratio_to_concurrent_bracket"], 100 * r["concurrent_bracket_drift"],
            r["steady_ratio_to_busy_ideal"], r["speedup_vs_static"]]
    for got, w, half in zip(g[:7], want, [5e-4, 5e-4, 0.05, 5e-4, 0.05, 5e-4, 5e-4]):  # printed digits
        assert abs(float(got) - w) <= half * 1.001, (case, g, want)
    assert int(g[7]) == r["steady_plan_changes"], (g, r["steady_plan_changes"])
    plans = ["/".join(map(str, e["batch"])) for e in r["epochs"]]
    assert g[8].startswith(plans[0] + " -> " + plans[1]), (g[8], plans)
    met = int(r["steady_ratio_to_bracket"] <= limits[case])
    assert "within %.2fx of the bracketed stand-alone ideal: %d of 1" % (limits[case], met) in block, block
    if case == "quota":
        assert "at least 1.8x faster than static: %d of 1" % int(r["speedup_vs_static"] >= 1.8) in block, block
        assert "at most 1 plan change(s) in the steady epochs: %d of 1" % int(r["steady_plan_changes"] <= 1) in block, block
    drifted = int(abs(r["bracket_drift"]) > 0.10)
    assert "more than 10%%: %d of 1" % drifted in block, block
    ideals = [x["independent_ideal_s"] for x in j["solo_rounds"]]
    rates = [x["solo_rate"] for x in j["solo_rounds"]]
    m = re.search(r"ideal ranged (\S+)-(\S+) s over (\d+) rounds \(max/min \+(\S+)%\); alone, (.*)$", block, re.M)
    assert m and int(m.group(3)) == len(ideals) >= 2, (block, ideals)
    for got, w, half in zip(m.groups()[:2] + (m.group(4),), [min(ideals), max(ideals), 100 * (max(ideals) / min(ideals) - 1)],
                            [5e-4, 5e-4, 0.05]):
        assert abs(float(got) - w) <= half * 1.001, (m.groups(), ideals)
    for i in range(2):
        lo, hi = min(v[i] for v in rates), max(v[i] for v in rates)
        assert "rank %d {:,.0f}-{:,.0f} img/s".format(lo, hi) % i in m.group(5), (m.group(5), rates)
    print("%s: tally ok (/bracket %.3f, met %d)" % (case, r["steady_ratio_to_bracket"], met))
PY
# The tally alone prints the same again; --policy picks another run.
python3 "$TALLY" "$TMP/set" >"$TMP/again.out" || fail "balance_set.py on the set failed"
cmp -s "$TMP/again.out" "$TMP/set.out" || fail "balance_set.py printed another tally: $(diff "$TMP/set.out" "$TMP/again.out")"
python3 "$TALLY" "$TMP/set" --policy static >"$TMP/static.out" || fail "balance_set.py --policy static failed"
grep -q "policy static" "$TMP/static.out" || fail "--policy static: $(cat "$TMP/static.out")"
# --record appends one record a run, with the figures the tally printed.
python3 "$TALLY" "$TMP/set" --record "$TMP/records.jsonl" --set t1 --command "balance_set.sh test" \
  >"$TMP/record.out" || fail "balance_set.py --record failed"
python3 - "$TMP/set" "$TMP/records.jsonl" "$cases" <<'PY' || fail "--record wrote other figures"
import json, sys
d, path, cases = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
recs = [json.loads(line) for line in open(path)]
assert [r["case"].split()[0] for r in recs] == [c for c in ("quota", "sleep") if c in cases], recs
for r in recs:
    case = r["case"].split()[0]
    run = {x["run"]: x for x in json.load(open("%s/%s1.json" % (d, case)))["runs"]}["dbs"]
    assert r["study"] == "balance-2rank" and r["set"] == "t1" and r["run"] == 1, r
    assert r["command"] == "balance_set.sh test" and r["policy"] == "dbs", r
    assert r["steady_plan_changes"] == run["steady_plan_changes"], (r, run)
    best = run.get("steady_ratio_to_busy_ideal")
    assert (r["ratio_to_best_split"] is None if not best
            else abs(r["ratio_to_best_split"] - best) <= 5e-4), (r, run)
    assert abs(r["bracket_drift_pct"] - 100 * run["bracket_drift"]) <= 0.05, (r, run)
print("record ok: %d run(s)" % len(recs))
PY
expect_fail "--record needs --set and --command" python3 "$TALLY" "$TMP/set" --record "$TMP/x.jsonl"
[ ! -e "$TMP/x.jsonl" ] || fail "--record without --set wrote $TMP/x.jsonl"
set_fails "--out '$TMP/set' already holds results" --out "$TMP/set"
echo "balance_set.sh: one set of $cases ok"

# A run that fails (rank 5 in a world of 2): non-zero, named, its stderr kept, no JSON.
if "$SET" "$BUILD" --sets 1 --cases sleep --out "$TMP/failing" -- --runs static,fixed:1,2,3 \
    >"$TMP/failing.out" 2>"$TMP/failing.err"; then fail "a failing run gave exit 0"; fi
grep -q "sleep run 1 failed" "$TMP/failing.err" || fail "failing run not named: $(cat "$TMP/failing.err")"
[ -s "$TMP/failing/sleep1.err" ] && ! compgen -G "$TMP/failing/*json*" >/dev/null ||
  fail "a failing run left: $(ls "$TMP/failing")"
echo "balance_set.sh: a failing run is reported, nothing half-written"

# Bad files for the tally: named, exit 1.
mkdir -p "$TMP/bad"
echo '{"runs": [' >"$TMP/bad/sleep1.json"
expect_fail "$TMP/bad/sleep1.json: cannot read it" python3 "$TALLY" "$TMP/bad"
cp "$TMP/set/sleep1.json" "$TMP/bad/sleep1.json"
expect_fail "$TMP/bad/sleep1.json: no run 'dbs-cost'" python3 "$TALLY" "$TMP/bad" --policy dbs-cost
if [ "$cases" = quota,sleep ]; then
  cp "$TMP/set/quota1.json" "$TMP/bad/sleep1.json"
  expect_fail "$TMP/bad/sleep1.json: a sleep run with --quota 1=0.5" python3 "$TALLY" "$TMP/bad"
fi
mkdir "$TMP/empty"
expect_fail "$TMP/empty: no quota<i>.json or sleep<i>.json" python3 "$TALLY" "$TMP/empty"
expect_fail "$TMP/x: no such directory" python3 "$TALLY" "$TMP/x"
echo "balance_set.py bad files ok"
