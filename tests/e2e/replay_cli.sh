# dbs-scheduler replay end to end: each committed recording replayed with its own policy is
# within 10% of its recorded time; --compare on the synthetic 1 : 1/3 cluster gives about 2x;
# malformed traces fail naming the line; a truncated last line is skipped with a warning
# (an error with --strict); --synthesize and --report write their files.
source "$(dirname "$0")/common.bash"
"$SCHED" replay --help >"$TMP/help" || fail "replay --help exited non-zero"
grep -q "Examples" "$TMP/help" || fail "replay --help shows no example"
for opt in --policy --rebalance-every --compare --json --report --synthesize; do
  grep -q -- "$opt" "$TMP/help" || fail "replay --help lacks $opt"
done

n=0
for t in traces/*.jsonl; do
  "$SCHED" replay "$t" --json >"$TMP/r.json" 2>"$TMP/err" || fail "replay $t: $(cat "$TMP/err")"
  [ ! -s "$TMP/err" ] || fail "replay $t warned: $(cat "$TMP/err")"
  err=$(json_get "$TMP/r.json" "list(d.values())[0]['error']")
  echo "$t: error against the recorded time $err"
  python3 -c "import sys; sys.exit(0 if abs(float('$err')) < 0.10 else 1)" ||
    fail "replay of $t is off by $err"
  n=$((n + 1))
done
[ "$n" -ge 3 ] || fail "expected at least 3 committed traces, found $n"

"$SCHED" replay --synthesize traces/synth-2rank.json -o "$TMP/two.jsonl" 2>"$TMP/err" ||
  fail "synthesize: $(cat "$TMP/err")"
grep -q "wrote $TMP/two.jsonl: 2 ranks, 100 epochs" "$TMP/err" || fail "no 'wrote' line: $(cat "$TMP/err")"
"$SCHED" replay "$TMP/two.jsonl" --compare dbs,static --json >"$TMP/c.json"
speedup=$(json_get "$TMP/c.json" "d['dbs']['speedup_vs_static']")
echo "synthetic 1 : 1/3: dbs over static ${speedup}x"
python3 -c "import sys; sys.exit(0 if abs(float('$speedup') - 2.0) < 0.1 else 1)" ||
  fail "speedup $speedup is not within 5% of 2"
"$SCHED" replay "$TMP/two.jsonl" --compare dbs,static --report "$TMP/two.html" >"$TMP/table" 2>/dev/null
grep -qE '^speedup +[0-9.]+x +1.000x' "$TMP/table" || fail "no speedup row: $(cat "$TMP/table")"
grep -q "<svg" "$TMP/two.html" || fail "report has no chart"
! grep -qE "<script|src=|href=" "$TMP/two.html" || fail "report is not self-contained"

# Malformed traces: each error names the file and the line.
good=traces/constant-dbs.jsonl
head -n 3 "$good" >"$TMP/bad.jsonl"; echo '{"type":"rank",' >>"$TMP/bad.jsonl"; tail -n +5 "$good" >>"$TMP/bad.jsonl"
expect_fail "$TMP/bad.jsonl:4: not valid JSON" "$SCHED" replay "$TMP/bad.jsonl"
sed '1s/"version":1/"version":7/' "$good" >"$TMP/v7.jsonl"
expect_fail "$TMP/v7.jsonl:1: header: unknown trace version 7" "$SCHED" replay "$TMP/v7.jsonl"
line=$(grep -n '"type":"rank"' "$good" | head -n 1 | cut -d: -f1)
sed "${line}s/\"compute_s\":[^,]*,//" "$good" >"$TMP/missing.jsonl"
expect_fail "$TMP/missing.jsonl:$line: rank record: missing field 'compute_s'" \
  "$SCHED" replay "$TMP/missing.jsonl"
lines=$(wc -l <"$good")
{ cat "$good"; printf '{"type":"disturbance","epoch":7,"ra'; } >"$TMP/cut.jsonl"
"$SCHED" replay "$TMP/cut.jsonl" >/dev/null 2>"$TMP/err" || fail "truncated last line was not skipped"
grep -qF "$TMP/cut.jsonl:$((lines + 1)): the last line is truncated" "$TMP/err" ||
  fail "no warning for the truncated line: $(cat "$TMP/err")"
expect_fail "$TMP/cut.jsonl:$((lines + 1)): the last line is truncated" \
  "$SCHED" replay --strict "$TMP/cut.jsonl"
expect_fail "unknown policy 'fastest'" "$SCHED" replay "$good" --policy fastest
expect_fail "give --policy or --compare" "$SCHED" replay "$good" --policy dbs --compare dbs,static

# A big synthetic cluster: written, replayed with a report (the time is printed, not asserted;
# bench figures live in the README).
"$SCHED" replay --synthesize traces/synth-1000.json -o "$TMP/big.jsonl" 2>/dev/null
start=$(date +%s.%N)
"$SCHED" replay "$TMP/big.jsonl" --compare dbs,static --json --report "$TMP/big.html" >"$TMP/big.json" 2>/dev/null
end=$(date +%s.%N)
echo "1000 ranks x 100 epochs: replay with report in $(python3 -c "print(round($end - $start, 3))") s," \
  "dbs over static $(json_get "$TMP/big.json" "round(d['dbs']['speedup_vs_static'], 3)")x"
grep -q "10th-90th percentile" "$TMP/big.html" || fail "1000-rank report draws no bands"
echo "all replay checks passed"
