# --metrics: one row per epoch and rank (CSV or JSONL), into folders created at start; the
# rows agree with the summary (busy included); a resumed run keeps the CSV's columns and refuses
# a file that is not ours; the training guide's gnuplot line plots it. Log lines carry an ISO 8601
# UTC timestamp and the rank. --decay-epochs counts epochs from 1 (the lr column shows it).
source "$(dirname "$0")/common.bash"
args=(--model lenet --epochs 2 --train-limit 256 --test-limit 128 --batch 64 --optimizer sgd
  --lr 0.02 --decay-epochs 2 --decay-factor 0.5 --no-progress)

# Alone, CSV, output folders that do not exist yet.
"$AGENT" "${args[@]}" --metrics "$TMP/m/deep/metrics.csv" --summary "$TMP/s/deep/summary.json" \
  >"$TMP/out" 2>"$TMP/err" || fail "agent run failed: $(cat "$TMP/err")"
python3 - "$TMP/m/deep/metrics.csv" "$TMP/s/deep/summary.json" <<'PY' || fail "CSV metrics wrong"
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
summary = json.load(open(sys.argv[2]))
want = ["epoch", "rank", "host", "batch", "samples", "steps", "compute_s", "comm_s", "throughput",
        "epoch_s", "images_per_s", "efficiency", "train_loss", "test_loss", "test_acc", "lr", "busy"]
assert list(rows[0].keys()) == want, rows[0].keys()
assert [(r["epoch"], r["rank"]) for r in rows] == [("1", "0"), ("2", "0")], rows
for r, e in zip(rows, summary["epochs"]):
    assert int(r["samples"]) == 256 and int(r["steps"]) == 4 and int(r["batch"]) == 64, r
    assert abs(float(r["train_loss"]) - e["train_loss"]) < 1e-5, (r, e)
    assert abs(float(r["test_acc"]) - e["test_acc"]) < 1e-5, (r, e)
    assert abs(float(r["throughput"]) - 256 / float(r["compute_s"])) < 0.01 * float(r["throughput"]), r
    assert 0 < float(r["busy"]) <= 1 and abs(float(r["busy"]) - e["busy"][0]) < 1e-5, (r, e)
# --decay-epochs 2: the second epoch (counted from 1) runs at half the rate, the first does not.
assert float(rows[0]["lr"]) == 0.02 and float(rows[1]["lr"]) == 0.01, [r["lr"] for r in rows]
print("csv ok:", len(rows), "rows, lr", [r["lr"] for r in rows], "busy", [r["busy"] for r in rows])
PY

# A resumed run appends in the columns the file has: a file from before the busy column goes on
# without it; a file whose first line is no header of ours is refused and left as it was.
"$AGENT" "${args[@]}" --epochs 1 --checkpoint "$TMP/ck" --metrics "$TMP/old.csv" >/dev/null 2>&1 ||
  fail "one-epoch run for the resume cases failed"
cut -d, -f1-16 "$TMP/old.csv" >"$TMP/old16.csv" && mv "$TMP/old16.csv" "$TMP/old.csv"
printf 'when,what\n1,2\n' >"$TMP/foreign.csv"
cp "$TMP/foreign.csv" "$TMP/foreign.before"
expect_fail "--metrics $TMP/foreign.csv: its first line is not a header this agent writes" \
  "$AGENT" "${args[@]}" --checkpoint "$TMP/ck" --resume --metrics "$TMP/foreign.csv"
cmp -s "$TMP/foreign.csv" "$TMP/foreign.before" || fail "the refused metrics file was changed"
"$AGENT" "${args[@]}" --checkpoint "$TMP/ck" --resume --metrics "$TMP/old.csv" >/dev/null 2>"$TMP/err3" ||
  fail "resume onto a metrics file without busy failed: $(cat "$TMP/err3")"
python3 - "$TMP/old.csv" <<'PY' || fail "resumed run did not keep the file's columns"
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
assert rows[0][-1] == "lr" and len(rows) == 3 and all(len(r) == 16 for r in rows), rows
assert [r[0] for r in rows[1:]] == ["1", "2"], rows
print("resumed onto a file without busy: 16 columns kept,", len(rows) - 1, "rows")
PY

# Every log line: "2026-11-22T23:40:01.123Z dbs [rank 0] info: ...".
[ -s "$TMP/err" ] || fail "the run logged nothing"
bad=$(grep -vE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z dbs \[rank [0-9]+\] (debug|info|warning|error): ' "$TMP/err" || true)
[ -z "$bad" ] || fail "log lines without timestamp and rank: $bad"
stamp=$(head -n 1 "$TMP/err" | cut -c1-19)
now=$(date -u +%s)
logged=$(date -u -d "${stamp/T/ } UTC" +%s)
[ $((now - logged)) -ge 0 ] && [ $((now - logged)) -lt 600 ] || fail "log time $stamp is not UTC now"
echo "log lines ok: $(head -n 1 "$TMP/err")"

# Two ranks, JSONL: a row per epoch and rank, the ranks' samples make the epoch.
"${MPIRUN[@]}" -np 2 "$AGENT" "${args[@]}" --metrics "$TMP/metrics.jsonl" >"$TMP/out2" 2>"$TMP/err2" ||
  fail "2-rank run failed: $(cat "$TMP/err2")"
python3 - "$TMP/metrics.jsonl" <<'PY' || fail "JSONL metrics wrong"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [(r["epoch"], r["rank"]) for r in rows] == [(1, 0), (1, 1), (2, 0), (2, 1)], rows
for e in (1, 2):
    mine = [r for r in rows if r["epoch"] == e]
    assert sum(r["samples"] for r in mine) == 256, mine
    assert sum(r["batch"] for r in mine) == 64, mine
    assert len({r["train_loss"] for r in mine}) == 1, mine
    # Every rank's busy seconds over rank 0's epoch clock: on epochs of some milliseconds, as
    # here, a rank that started its epoch earlier can pass 1; mpi_dbs_job checks the values.
    assert all(r["busy"] > 0 for r in mine), mine
print("jsonl ok:", len(rows), "rows")
PY
grep -q "\[rank 1\]" "$TMP/err2" || fail "rank 1 logs without its rank"

# The training guide's plot line, as it stands, on this file.
cmd=$(grep -m1 '^gnuplot -e' docs/guides/training.md) || fail "docs/guides/training.md has no gnuplot line"
command -v gnuplot >/dev/null ||
  (source agents/setup.sh && dbs_install_missing gnuplot-nox) >/dev/null 2>&1 || true
if command -v gnuplot >/dev/null; then
  mkdir -p "$TMP/plot/out"
  cp "$TMP/m/deep/metrics.csv" "$TMP/plot/out/metrics.csv"
  (cd "$TMP/plot" && eval "$cmd") || fail "the guide's gnuplot line failed: $cmd"
  [ "$(head -c 4 "$TMP/plot/out/throughput.png" | tail -c 3)" = PNG ] || fail "no PNG from: $cmd"
  echo "guide plot line ok: $(stat -c %s "$TMP/plot/out/throughput.png") bytes of PNG"
else
  echo "gnuplot not installed and not installable (not root?): the guide's plot line not run"
fi
