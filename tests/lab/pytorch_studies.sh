# lab/experiments/pytorch_speed.py, pytorch_convergence.py and pytorch_exchange.py at tiny
# sizes: their option errors, the records they write (the studies in one file; a speed study of
# one case replaces that case's records only), the tables, and --report printing the same tables
# again from the records (figures are not judged: studies, not tests; the exchange study's byte
# counts, which are exact, are).
source "$(dirname "$0")/../e2e/common.bash"
SPEED=lab/experiments/pytorch_speed.py
CONV=lab/experiments/pytorch_convergence.py
PY=/usr/bin/python3
$PY -c 'import torch' 2>/dev/null || { echo "skip: torch is not importable by $PY"; exit 77; }
[ -d "$BUILD/python/dbs/torch" ] || { echo "skip: no $BUILD/python (-Dpython=enabled)"; exit 77; }
[ -x /usr/bin/torchrun ] || { echo "skip: no /usr/bin/torchrun"; exit 77; }
# torchrun's agent looks at its ranks every --monitor_interval s (default 5) and ends only at
# such a look: the studies' torchruns (given this environment) poll every 0.2 s instead.
export PET_MONITOR_INTERVAL=0.2

expect_fail "--cases: 'slow' is not quota or disturb" $PY $SPEED --cases quota,slow
expect_fail "--steady-from 6: expected 1..--epochs 5" $PY $SPEED --steady-from 6
expect_fail "no /nonexistent/python/dbs/torch" $PY $SPEED --build /nonexistent --out "$TMP/x.jsonl"
expect_fail "$TMP/none.jsonl: cannot read it" $PY $CONV --report "$TMP/none.jsonl"
[ ! -e "$TMP/x.jsonl" ] || fail "a refused study wrote its --out"

# The quota case where this machine lets us make CPU cgroups (root, cgroup v1's cpu controller).
CG=/sys/fs/cgroup/cpu
cases=disturb
if [ "$(id -u)" = 0 ] && [ -w "$CG/cgroup.procs" ] && [ -e "$CG/cpu.cfs_quota_us" ]; then
  cases=quota,disturb
else
  echo "skip: the quota case needs root and cgroup v1's cpu controller at $CG (not here)"
fi
before=$(ls -d "$CG"/dbs-pytorch-* 2>/dev/null || true)  # a study running beside the test
tiny=(--epochs 2 --batch 64 --train-limit 256 --test-limit 64)
$PY $SPEED --build "$BUILD" --out "$TMP/p.jsonl" --runs 1 --cases "$cases" "${tiny[@]}" \
  --steady-from 2 --overhead-worlds 1 --overhead-epochs 1 >"$TMP/speed.out" 2>"$TMP/speed.err" ||
  { cat "$TMP/speed.err"; fail "pytorch_speed.py failed"; }
# A group left by this test's study: new since `before`, named by a pid no longer running (a
# study that started meanwhile beside the test still runs).
left=
for g in $(comm -13 <(echo "$before") <(ls -d "$CG"/dbs-pytorch-* 2>/dev/null || true)); do
  pid=${g##*/dbs-pytorch-}
  pid=${pid%%-*}
  kill -0 "$pid" 2>/dev/null || left+=" $g"
done
[ -z "$left" ] || fail "a cgroup was left:$left"
$PY $CONV --build "$BUILD" --out "$TMP/p.jsonl" --logs "$TMP/logs" --parallel --epochs 1 --batch 64 \
  --train-limit 256 --test-limit 64 >"$TMP/conv.out" 2>"$TMP/conv.err" ||
  { cat "$TMP/conv.err"; fail "pytorch_convergence.py failed"; }
for arm in static equal dbs; do
  [ -s "$TMP/logs/$arm-seed1.log" ] || fail "no log of arm $arm: $(ls "$TMP/logs")"
done
expect_fail "--arms: 'fast' is not one of static, equal, dbs" $PY $CONV --arms static,fast
expect_fail "--batch 63: arm equal splits it in two" $PY $CONV --batch 63

$PY - "$TMP/p.jsonl" "$TMP/speed.out" "$TMP/conv.out" "$cases" <<'PY' || fail "the records or tables are wrong"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
speed = [r for r in records if r["study"] == "pytorch-speed"]
conv = [r for r in records if r["study"] == "pytorch-convergence"]
cases = sys.argv[4].split(",")
want = [(c, p, 2) for c in cases for p in ("static", "dbs")] + [("overhead", p, 1) for p in ("static", "dbs")]
assert [(r["case"], r["policy"], r["world"]) for r in speed] == want, [(r["case"], r["policy"]) for r in speed]
assert [(r["arm"], r["seed"], r["policy"]) for r in conv] == [
    ("static", 1, "static"), ("equal", 1, "fixed:32,32"), ("dbs", 1, "dbs")], conv
for r in speed:
    s = r["summary"]
    assert s["policy"] == r["policy"] and s["world"] == r["world"] and len(s["epochs"]) >= 1, r
    assert (r["quota"] == "1=0.33") == (r["case"] == "quota"), r
    assert (s["disturb"] == ["rank=1,factor=3"]) == (r["case"] == "disturb"), s["disturb"]
    for e in s["epochs"]:
        assert e["steps"] == 4, e
        if r["policy"] == "dbs":  # dbs.torch's own CPU time: some, and far less than the epoch
            assert len(e["dbs_overhead_s"]) == r["world"], e
            assert all(0 < x < e["wall_s"] for x in e["dbs_overhead_s"]), e
        else:
            assert "dbs_overhead_s" not in e, e
    walls = [e["wall_s"] for e in s["epochs"][r["steady_from"] - 1:]]
    assert abs(r["steady_epoch_s"] - sum(walls) / len(walls)) < 1e-9, r
out = open(sys.argv[2]).read()
for c in cases:
    assert "\n%s case, 2 ranks, steady epochs from 2:" % c in out, out
    assert "at least 1.8x faster than static: " in out and " of 1;" in out, out
assert "share" in out and "(at most 2%)" in out, out
conv_out = open(sys.argv[3]).read()
assert "seed 1: test accuracy" in conv_out and "dbs - equal " in conv_out, conv_out
assert "dbs - static over 1 seed(s): mean " in conv_out, conv_out
print("records and tables ok")
PY
$PY $SPEED --report "$TMP/p.jsonl" >"$TMP/again.out" || fail "--report failed"
cmp -s "$TMP/speed.out" "$TMP/again.out" || fail "--report printed another table: $(diff "$TMP/speed.out" "$TMP/again.out")"
$PY $CONV --report "$TMP/p.jsonl" >"$TMP/conv_again.out" || fail "convergence --report failed"
cmp -s "$TMP/conv.out" "$TMP/conv_again.out" || fail "convergence --report printed another table"

# Each record says when and on which commit it was measured; a study of one case replaces that
# case's records only (the other case's and the overhead's stay, in their place before it).
$PY $SPEED --build "$BUILD" --out "$TMP/p.jsonl" --runs 1 --cases disturb "${tiny[@]}" \
  --steady-from 2 --overhead-worlds '' >"$TMP/again-disturb.out" 2>"$TMP/again-disturb.err" ||
  { cat "$TMP/again-disturb.err"; fail "pytorch_speed.py --cases disturb failed"; }
$PY - "$TMP/p.jsonl" "$cases" "$(git rev-parse HEAD 2>/dev/null || echo unknown)" <<'PY' || fail "a study of one case replaced other records"
import json, re, sys
speed = [json.loads(l) for l in open(sys.argv[1])]
speed = [r for r in speed if r["study"] == "pytorch-speed"]
cases, head = sys.argv[2].split(","), sys.argv[3]
for r in speed:
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", r["date"]), r["date"]
    assert r["commit"] in (head, head + "+dirty"), (r["commit"], head)  # "unknown" outside git
kept = [c for c in cases if c != "disturb"]
want = ([(c, p, 2) for c in kept for p in ("static", "dbs")]
        + [("overhead", p, 1) for p in ("static", "dbs")]
        + [("disturb", p, 2) for p in ("static", "dbs")])
assert [(r["case"], r["policy"], r["world"]) for r in speed] == want, [(r["case"], r["policy"]) for r in speed]
assert len({r["date"] for r in speed if r["case"] == "disturb"}) == 1
print("a study of one case replaced its records only")
PY

# pytorch_exchange.py at a tiny size, local SGD under plain DDP and dbs.torch (the byte count
# that differs between the two): the bytes handed to all_reduce per step are exact counts, so
# the table's two byte columns agree.
EXCH=lab/experiments/pytorch_exchange.py
expect_fail "--exchanges: 'fp32' is not one of allreduce, fp16, powersgd, local" $PY $EXCH --exchanges fp32
expect_fail "--epochs 1: expected >= 2" $PY $EXCH --epochs 1
$PY $EXCH --build "$BUILD" --out "$TMP/p.jsonl" --logs "$TMP/xlogs" --seeds 1 --exchanges local \
  --epochs 2 --batch 64 --train-limit 704 --test-limit 64 --average-every 4 >"$TMP/exch.out" \
  2>"$TMP/exch.err" || { cat "$TMP/exch.err"; fail "pytorch_exchange.py failed"; }
$PY - "$TMP/p.jsonl" "$TMP/exch.out" <<'PY' || fail "the exchange study's records or table are wrong"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
arms = [(r["exchange"], r["policy"]) for r in records if r["study"] == "pytorch-exchange"]
assert arms == [("local", "static"), ("local", "dbs")], arms
rows = [l.split() for l in open(sys.argv[2]) if l.split()[:1] == ["local"]]
assert len(rows) == 2 and all(r[-1] == r[-2] for r in rows), rows
print("exchange records and table ok")
PY
$PY $EXCH --report "$TMP/p.jsonl" >"$TMP/exch_again.out" || fail "exchange --report failed"
cmp -s "$TMP/exch.out" "$TMP/exch_again.out" || fail "exchange --report printed another table"
echo "pytorch studies ok"
