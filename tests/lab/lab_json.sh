# dbs-lab sweep and balance print the documented JSON keys and refuse bad options naming them
# (figures are not judged here: studies, not tests).
source "$(dirname "$0")/../e2e/common.bash"
# sweep: two cells measured through mpirun, the fit, the predicted grid and the page.
"$LAB" sweep --model lenet --ranks 1 --threads 1 --batch 64,256 --epochs 1 --train-limit 1024 \
  --test-limit 200 --predict-workers 1,4 --work-dir "$TMP/sweep" --out "$TMP/sweep.jsonl" \
  --html "$TMP/sweep.html" >"$TMP/sweep.json" 2>"$TMP/sweep.err" || { cat "$TMP/sweep.err"; fail "sweep failed"; }
python3 - "$TMP/sweep.json" "$TMP/sweep.jsonl" "$TMP/sweep.html" <<'PY' || fail "sweep output"
import json, sys, xml.etree.ElementTree as ET
d = json.load(open(sys.argv[1]))
m, p = d["measured"], d["predicted"]
assert [(c["ranks"], c["global_batch"]) for c in m] == [(1, 64), (1, 256)], m
assert all(len(c["epoch_s"]) == 1 and c["epoch_s_median"] > 0 and 0 <= c["test_acc"] <= 1 for c in m), m
assert d["fit"]["beta_s_per_sample"] > 0 and d["fit"]["alpha_s_per_step"] >= 0, d["fit"]
assert [(c["ranks"], c["global_batch"]) for c in p] == [(1, 64), (1, 256), (4, 64), (4, 256)], p
# one rank: the simulator costs S (alpha + beta b), the line the fit drew through the two cells
for c in p[:2]:
    steps = -(-1024 // c["global_batch"])
    want = steps * (d["fit"]["alpha_s_per_step"] + d["fit"]["beta_s_per_sample"] * c["global_batch"])
    assert abs(c["predicted_epoch_s"] - want) <= 1e-6 * want, (c, want)
assert len(open(sys.argv[2]).read().splitlines()) == len(m) + len(p)
svg = ET.parse(sys.argv[3]).getroot().findall(".//{http://www.w3.org/2000/svg}svg")
assert len(svg) == 2, len(svg)
print("sweep: fit", d["fit"])
PY
expect_fail "is not an executable dbs-agent" "$LAB" sweep --agent /nonexistent
# balance --trace-dir is made at start (mkdir -p) or refused at once, not after the solo runs.
expect_fail "--trace-dir /proc/none/x: cannot create it" "$LAB" balance --trace-dir /proc/none/x
# Out-of-range numbers get a short message (CLI11's own names the type's whole range).
expect_fail "--solo-limit: must be > 0, got 0" "$LAB" balance --solo-limit 0
# Every --runs entry is checked before the first run, naming the entry.
expect_fail "--runs dbs+overlap: --overlap needs --allreduce mpi" "$LAB" balance --runs static,dbs+overlap --allreduce ring
expect_fail "--runs dbs@x: expected POLICY@K" "$LAB" balance --runs static,dbs@x

# balance --quota refuses bad specs before touching any cgroup (world of one: no mpirun needed).
for spec in 1=0.5 0=0 0=x x=1 0; do
  if "$LAB" balance --quota "$spec" --epochs 1 --train-limit 256 >"$TMP/q.out" 2>"$TMP/q.err"; then
    fail "balance --quota $spec was accepted"
  fi
  grep -q -- "--quota '$spec'" "$TMP/q.err" || fail "balance --quota $spec: no error naming it: $(cat "$TMP/q.err")"
done
ls /sys/fs/cgroup/cpu 2>/dev/null | grep -q '^dbs-lab-' && fail "a dbs-lab cgroup was left behind"
echo "balance --quota errors ok"

# balance --quota for real, where this machine lets us make cgroups (cgroup v1's cpu controller,
# as root): rank 1 held to half a core (its trace says so, rank 0's says no quota), and the
# groups an aborted run left (named after a launcher that is gone) are removed at the next start,
# a live launcher's kept.
CG=/sys/fs/cgroup/cpu
if [ "$(id -u)" = 0 ] && [ -w "$CG/cgroup.procs" ] && [ -e "$CG/cpu.cfs_quota_us" ]; then
  sleep 0 & gone=$!; wait "$gone"
  mkdir "$CG/dbs-lab-$gone-rank1" "$CG/dbs-lab-$$-rank7"
  trap 'rmdir "$CG/dbs-lab-$$-rank7" "$CG/dbs-lab-$gone-rank1" 2>/dev/null || true; rm -rf "$TMP"' EXIT
  "${MPIRUN[@]}" -np 2 "$LAB" balance --model lenet --epochs 1 --batch 64 --train-limit 256 \
    --test-limit 64 --solo-epochs 0 --runs static --quota 1=0.5 --trace-dir "$TMP/qtr" \
    >"$TMP/quota.json" 2>"$TMP/quota.err" || { cat "$TMP/quota.err"; fail "balance --quota 1=0.5 failed"; }
  grep -q "removed 1 CPU cgroup(s) left by an earlier killed or aborted run" "$TMP/quota.err" ||
    fail "the leftover group was not reported: $(cat "$TMP/quota.err")"
  [ -d "$CG/dbs-lab-$gone-rank1" ] && fail "the leftover group of a gone launcher was kept"
  [ -d "$CG/dbs-lab-$$-rank7" ] || fail "a live launcher's group was removed"
  rmdir "$CG/dbs-lab-$$-rank7"
  python3 - "$TMP/qtr/static.jsonl" <<'PY' || fail "quota in the trace"
import json, sys
q = {d["rank"]: d["quota_cores"] for d in map(json.loads, open(sys.argv[1])) if d["type"] == "timing"}
assert q == {0: 0.0, 1: 0.5}, q
PY
  # --wait auto (the default): the quota-held rank sleeps and the JSON says why, rank 0 spins.
  python3 - "$TMP/quota.json" <<'PY' || fail "how the ranks wait, in the balance JSON"
import json, sys
w = json.load(open(sys.argv[1]))["waiting"]
assert w == ["spin (auto: no CPU quota)", "sleep (auto: CPU quota of 0.50 core(s) for 1 thread(s))"], w
PY
  ls "$CG" | grep -q '^dbs-lab-' && fail "balance --quota left a cgroup behind: $(ls "$CG" | grep '^dbs-lab-')"
  echo "balance --quota 1=0.5 ok: rank 1 at half a core, leftovers removed"
else
  echo "skip: balance --quota for real needs root and cgroup v1's cpu controller at $CG (not here)"
fi

# balance on 2 ranks: the documented keys, the stand-alone runs before and after the policy runs,
# and the ratios each gives (rank 1 slowed x3, so dbs must plan unequal batches).
"${MPIRUN[@]}" -np 2 "$LAB" balance --model lenet --epochs 2 --steady-from 2 --batch 64 \
  --train-limit 512 --test-limit 100 --solo-epochs 1 --solo-limit 256 --runs static,dbs \
  >"$TMP/balance.json" 2>"$TMP/balance.err" || { cat "$TMP/balance.err"; fail "balance failed"; }
python3 - "$TMP/balance.json" <<'PY' || fail "balance output"
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["solo_rate"]) == 2 and len(d["solo_rate_after"]) == 2, d
assert all(v > 0 for v in d["solo_rate"] + d["solo_rate_after"]), d
for k, rates in (("independent_ideal_s", d["solo_rate"]), ("independent_ideal_after_s", d["solo_rate_after"])):
    assert abs(d[k] - 512 / sum(rates)) <= 1e-9 * d[k], (k, d[k], rates)
assert abs(d["independent_drift"] - (d["independent_ideal_after_s"] / d["independent_ideal_s"] - 1)) < 1e-12
assert len(d["waiting"]) == 2 and all(w.startswith(("spin (", "sleep (")) for w in d["waiting"]), d["waiting"]
runs = {r["run"]: r for r in d["runs"]}
assert set(runs) == {"static", "dbs"}, runs
for r in runs.values():
    wall = r["epochs"][1]["wall_s"]
    assert r["steady_epochs"] == 1 and abs(r["steady_wall_s"] - wall) < 1e-12, r
    assert abs(r["steady_ratio_to_independent"] - wall / d["independent_ideal_s"]) < 1e-9, r
    assert abs(r["steady_ratio_to_independent_after"] - wall / d["independent_ideal_after_s"]) < 1e-9, r
# Three stand-alone rounds: before static, between the runs, after dbs; each run is bracketed.
rounds = d["solo_rounds"]
assert [r["after_run"] for r in rounds] == ["", "static", "dbs"], rounds
assert rounds[0]["solo_rate"] == d["solo_rate"] and rounds[2]["solo_rate"] == d["solo_rate_after"], rounds
for k, name in enumerate(("static", "dbs")):
    r, b, a = runs[name], rounds[k]["independent_ideal_s"], rounds[k + 1]["independent_ideal_s"]
    assert abs(b - 512 / sum(rounds[k]["solo_rate"])) <= 1e-9 * b, rounds[k]
    assert r["bracket_ideal_s"] == [b, a], (r, rounds)
    assert abs(r["bracket_drift"] - (a / b - 1)) < 1e-12, r
    assert abs(r["steady_ratio_to_bracket"] - r["epochs"][1]["wall_s"] / ((a + b) / 2)) < 1e-9, r
# Each round is followed by a concurrent one (all ranks alone at once): its rates and ideal, and
# each run's concurrent bracket. A rank done before the others trains on (filler epochs): in every
# round some rank waited for another that way, and every measured epoch ran beside the others.
assert d["concurrent_rate"] == rounds[0]["concurrent_rate"] and len(d["concurrent_rate"]) == 2, d
for k, rd in enumerate(rounds):
    c = rd["concurrent_rate"]
    assert len(c) == 2 and all(v > 0 for v in c), rd
    assert abs(rd["concurrent_ideal_s"] - 512 / sum(c)) <= 1e-9 * rd["concurrent_ideal_s"], rd
    assert len(rd["concurrent_filler_epochs"]) == 2 and sum(rd["concurrent_filler_epochs"]) >= 1, rd
    assert 0.9 <= rd["concurrent_cover"] <= 1.0, rd
for k, name in enumerate(("static", "dbs")):
    r, b, a = runs[name], rounds[k]["concurrent_ideal_s"], rounds[k + 1]["concurrent_ideal_s"]
    assert r["concurrent_bracket_ideal_s"] == [b, a], (r, rounds)
    assert abs(r["steady_ratio_to_concurrent_bracket"] - r["epochs"][1]["wall_s"] / ((a + b) / 2)) < 1e-9, r
# Inside each run: how busy every rank was, and the best split for the speeds it had. Under
# static, rank 1 (slowed x3 by sleep, which counts as its work) is the busier. By how much moves
# with a test beside this one, which slows rank 0's compute but not rank 1's sleep.
for r in runs.values():
    for e in r["epochs"]:
        assert len(e["busy"]) == 2 and all(0 < b <= 1.05 for b in e["busy"]), e
        assert 0 < e["busy_ideal_s"] <= 1.05 * e["wall_s"], e
    steady = r["epochs"][1:]
    assert abs(r["steady_busy_ideal_s"] - sum(e["busy_ideal_s"] for e in steady)) < 1e-12, r
    assert abs(r["steady_ratio_to_busy_ideal"] - r["steady_wall_s"] / r["steady_busy_ideal_s"]) < 1e-9, r
    assert all(abs(x - y) < 1e-12 for x, y in zip(r["steady_busy"], steady[0]["busy"], strict=True)), r
for e in runs["static"]["epochs"]:
    assert e["busy"][1] > e["busy"][0], ("static: rank 1 slowed x3 not the busier", e)
assert runs["static"]["speedup_vs_static"] == 1.0
assert runs["dbs"]["epochs"][1]["batch"][0] > runs["dbs"]["epochs"][1]["batch"][1], runs["dbs"]
print("balance: independent ideal %.3f s before, %.3f s after" % (d["independent_ideal_s"], d["independent_ideal_after_s"]))
PY
# The same figures as a table on stderr: a line per run that agrees with the JSON, and a note for
# each bracket (one-at-a-time, concurrent) of a run that drifted beyond 10% (and for no other).
python3 - "$TMP/balance.json" "$TMP/balance.err" <<'PY' || fail "balance summary on stderr"
import json, sys
d = json.load(open(sys.argv[1]))
lines = open(sys.argv[2]).read().splitlines()
head = [i for i, l in enumerate(lines) if l.startswith("run ")]
assert len(head) == 1 and lines[head[0]].split()[1:] == ["epoch_s", "/independent", "/bracket", "drift",
    "/concurrent", "drift", "/best_split", "vs_static", "changes"], lines
rows = {l.split()[0]: l.split()[1:] for l in lines[head[0] + 1:] if not l.startswith("note:")}
assert set(rows) == {"static", "dbs"}, rows
x = lambda s: float(s.rstrip("x%"))
for r in d["runs"]:
    f = rows[r["run"]]
    assert abs(x(f[0]) - r["steady_wall_s"] / r["steady_epochs"]) <= 6e-4, (f, r)
    for k, key in ((1, "steady_ratio_to_independent"), (2, "steady_ratio_to_bracket"),
                   (4, "steady_ratio_to_concurrent_bracket"), (6, "steady_ratio_to_busy_ideal")):
        assert abs(x(f[k]) - r[key]) <= 6e-4, (k, f, r[key])
    assert abs(x(f[3]) - 100 * r["bracket_drift"]) <= 0.06, (f, r["bracket_drift"])
    assert abs(x(f[7]) - r["speedup_vs_static"]) <= 6e-3 and int(f[8]) == r["steady_plan_changes"], (f, r)
notes = [l for l in lines if l.startswith("note: run ")]
want = [(r["run"], what) for r in d["runs"]
        for key, what in (("bracket_drift", "stand-alone"), ("concurrent_bracket_drift", "concurrent"))
        if abs(r[key]) > 0.10]
assert [(n.split()[2].rstrip(":"), n.split()[4]) for n in notes] == want, (notes, want)
print("balance summary: %d runs, %d drift note(s)" % (len(rows), len(notes)))
PY
"${MPIRUN[@]}" -np 2 "$LAB" balance --model lenet --epochs 1 --batch 64 --train-limit 256 \
  --test-limit 100 --solo-epochs 1 --solo-limit 128 --runs static,dbs,fixed:40,24 --no-solo-after --no-solo-between \
  --min-gain 0.07 --trace-dir "$TMP/tr1" \
  >"$TMP/balance1.json" 2>"$TMP/balance1.err" || { cat "$TMP/balance1.err"; fail "balance --no-solo-after failed"; }
# --min-gain reaches the policy of every run (the traces' config) and the JSON; the default is the policy's.
json_get "$TMP/balance.json" "d['min_gain']" | grep -qx 0.02 || fail "balance's default min_gain is not the policy's 0.02"
json_get "$TMP/balance1.json" "d['min_gain']" | grep -qx 0.07 || fail "--min-gain 0.07 not in the JSON"
for run in static dbs; do
  head -n 1 "$TMP/tr1/$run.jsonl" | python3 -c "import json, sys; assert json.load(sys.stdin)['config']['min_gain'] == 0.07" ||
    fail "--min-gain 0.07 did not reach run $run: $(head -c 300 "$TMP/tr1/$run.jsonl")"
done
expect_fail "--min-gain: must be in [0, 0.999999], got 1.5" "$LAB" balance --min-gain 1.5
# --runs splits at commas; a fixed: entry keeps its sizes.
json_get "$TMP/balance1.json" "[(r['run'], r['epochs'][0]['batch']) for r in d['runs']][2]" |
  grep -qx "('fixed:40,24', \[40, 24\])" || fail "--runs fixed:40,24 did not run the plan 40/24"
# A policy that does not fit the world size is refused before any run (rank 0 names it).
expect_fail "--runs fixed:40: policy 'fixed:40': 1 sizes for 2 ranks" \
  "${MPIRUN[@]}" -np 2 "$LAB" balance --model lenet --epochs 1 --batch 64 --train-limit 256 --runs static,fixed:40
expect_fail "--disturb rank=2,factor=2,from=1,mode=sleep: the job has only 2 ranks" \
  "${MPIRUN[@]}" -np 2 "$LAB" balance --model lenet --epochs 1 --batch 64 --train-limit 256 --disturb rank=2,factor=2
json_get "$TMP/balance1.json" "d['solo_rate_after'] == [] and d['independent_ideal_after_s'] == 0 and 'steady_ratio_to_independent_after' not in d['runs'][0]" |
  grep -qx True || fail "--no-solo-after still ran the stand-alone runs after"
json_get "$TMP/balance1.json" "len(d['solo_rounds']) == 1 and all('bracket_ideal_s' not in r for r in d['runs'])" |
  grep -qx True || fail "--no-solo-between still ran the stand-alone runs between"
"${MPIRUN[@]}" -np 2 "$LAB" balance --model lenet --epochs 1 --batch 64 --train-limit 256 \
  --test-limit 100 --solo-epochs 1 --solo-limit 128 --runs static --no-solo-concurrent \
  >"$TMP/balance2.json" 2>"$TMP/balance2.err" || { cat "$TMP/balance2.err"; fail "balance --no-solo-concurrent failed"; }
json_get "$TMP/balance2.json" "d['concurrent_rate'] == [] and 'concurrent_rate' not in d['solo_rounds'][0] and 'concurrent_bracket_ideal_s' not in d['runs'][0] and 'bracket_ideal_s' in d['runs'][0]" |
  grep -qx True || fail "--no-solo-concurrent still ran the concurrent stand-alone runs"
echo "lab JSON ok"
