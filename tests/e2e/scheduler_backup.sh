# The state directory's lifecycle through the real binaries: --keep-finished removes a finished
# job's trace and its line on /status without a restart; `dbs-scheduler backup` taken while a
# 2-rank job runs, restored with `dbs-scheduler restore` into a fresh directory, serves the same
# /status (the finished job as it was, the running one at the epoch of the backup) and the same
# traces; a truncated archive, a non-empty target and a journal of a newer version are refused
# with one message naming the file, and nothing is changed.
source "$(dirname "$0")/common.bash"
DAEMON_PID=
trap '[ -n "$DAEMON_PID" ] && kill -9 "$DAEMON_PID" 2>/dev/null; rm -rf "$TMP"' EXIT
STATE=$TMP/state
status() { curl -sf "http://$HTTP/status"; }

start_daemon --state-dir "$STATE" --keep-finished 1
"$SCHED" serve --help | grep -q -- "--keep-finished UINT=0 " || fail "--help: --keep-finished"
"$SCHED" serve --help | grep -q -- "--retention FLOAT:DURATION=0 " || fail "--help: --retention"
expect_fail "--retention: '-1d' is not a duration" "$SCHED" serve --retention -1d

# Retention: b finishing pushes a out of traces/ and /status at once.
run_job a 2 || fail "job a: $(cat "$TMP/a.out")"
run_job b 2 || fail "job b: $(cat "$TMP/b.out")"
for _ in $(seq 100); do [ -e "$STATE/traces/a.jsonl" ] || break; sleep 0.05; done
[ ! -e "$STATE/traces/a.jsonl" ] || fail "a's trace kept past --keep-finished 1"
[ -e "$STATE/traces/b.jsonl" ] || fail "b's trace removed"
status >"$TMP/s1.json"
[ "$(json_get "$TMP/s1.json" '[j["job"] for j in d["jobs"]]')" = "['b']" ] || fail "jobs: $(cat "$TMP/s1.json")"
[ "$(json_get "$TMP/s1.json" 'd["daemon"]["retention"]["finished_kept"], d["daemon"]["retention"]["pruned_finished"]')" = "1 1" ] ||
  fail "retention: $(json_get "$TMP/s1.json" 'd["daemon"]["retention"]')"
echo "retention: a pruned from traces/ and /status, b kept"

# Backup while job c runs (rank 1 slowed so that its epochs last).
(umask 077 && "$SCHED" job-key --token-file "$TMP/token" c >"$TMP/c.key")
DBS_SCHEDULER=$LISTEN DBS_TOKEN_FILE=$TMP/c.key "${MPIRUN[@]}" -x DBS_SCHEDULER -x DBS_TOKEN_FILE \
  -np 2 "$AGENT" --model lenet --epochs 6 --train-limit 1000 --test-limit 200 --threads 1 \
  --no-progress --job c --scheduler-timeout 30 --disturb rank=1,factor=2 >"$TMP/c.out" 2>&1 &
mp=$!
for _ in $(seq 1200); do
  n=$(grep -c '"type":"plan"' "$STATE/traces/c.jsonl" 2>/dev/null || true)
  [ "${n:-0}" -ge 3 ] && break
  sleep 0.05
done
"$SCHED" backup --state-dir "$STATE" --out "$TMP/backup.tar" | tee "$TMP/backup.out"
mode=$(stat -c %a "$TMP/backup.tar")
[ "$mode" = 600 ] || fail "the backup is mode $mode, not 600 (it holds every job's ids, owners and hosts)"
status >"$TMP/s2.json"
# b's trace as backed up: once c finishes, --keep-finished 1 removes it from $STATE.
cp "$STATE/traces/b.jsonl" "$TMP/b.backed-up.jsonl"
kill -0 "$mp" 2>/dev/null || fail "job c ended before the backup"
wait "$mp" || fail "job c: $(cat "$TMP/c.out")"
# a, b and c all have records in the journal (no compaction since the start): their traces are
# rewritten from it on the restore, none is copied.
grep -q "(3 jobs whose traces are rewritten from it), 0 finished traces" "$TMP/backup.out" ||
  fail "backup: $(cat "$TMP/backup.out")"
tar tf "$TMP/backup.tar" | sort >"$TMP/members"
printf '%s\n' dbs-backup.json journal.jsonl | diff - "$TMP/members" ||
  fail "backup members: $(cat "$TMP/members")"
kill -TERM "$DAEMON_PID"
DAEMON_PID=

# Bad input: nothing is written.
head -c 3000 "$TMP/backup.tar" >"$TMP/cut.tar"
expect_fail "$TMP/cut.tar: truncated" "$SCHED" restore --from "$TMP/cut.tar" --state-dir "$TMP/r1"
[ ! -e "$TMP/r1" ] || fail "a truncated archive left $TMP/r1"
mkdir "$TMP/full" && touch "$TMP/full/x"
expect_fail "$TMP/full: not an empty directory" "$SCHED" restore --from "$TMP/backup.tar" --state-dir "$TMP/full"
[ "$(ls "$TMP/full")" = x ] || fail "restore changed a non-empty directory"

# Restore into a fresh directory and start a daemon on it.
"$SCHED" restore --from "$TMP/backup.tar" --state-dir "$TMP/restored"
start_daemon --state-dir "$TMP/restored" --keep-finished 1
status >"$TMP/s3.json"
python3 - "$TMP/s2.json" "$TMP/s3.json" "$STATE" "$TMP/restored" <<'PY' || fail "restored /status or traces differ"
import json, sys
live, restored, old_dir, new_dir = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3], sys.argv[4]
def job(s, name): return next(j for j in s["jobs"] if j["job"] == name)
def same(j):  # what does not depend on the moment or the connections
    j = dict(j); [j.pop(k) for k in ("last_report_age_s", "connected", "ranks", "state")]; return j
assert [j["job"] for j in restored["jobs"]] == ["c", "b"], restored["jobs"]
assert same(job(restored, "b")) == same(job(live, "b"))
c_live, c_back = job(live, "c"), job(restored, "c")
assert c_back["state"] == "running" and c_back["connected"] == 0
assert 2 <= c_back["plans"] <= c_live["plans"], (c_back["plans"], c_live["plans"])
assert restored["daemon"]["retention"]["finished_kept"] == 1
for name in ("b", "c"):  # b as it was; c's trace is the start of the full one
    a = open(f"{old_dir}/traces/{name}.jsonl" if name == "c" else f"{old_dir}/../b.backed-up.jsonl").read()
    b = open(f"{new_dir}/traces/{name}.jsonl").read()
    assert (a == b) if name == "b" else (a.startswith(b) and b.count('"type":"plan"') == c_back["plans"] + 1), name
print("restored: b as before, c at plan", c_back["plans"], "of", c_live["plans"], "when backed up")
PY
kill -TERM "$DAEMON_PID"
DAEMON_PID=

# A journal of a newer version: refused, untouched.
cp -a "$TMP/restored" "$TMP/future"
sed -i '1s/.*/{"format":"dbs-journal","version":99}/' "$TMP/future/journal.jsonl"
before=$(cd "$TMP/future" && find . -type f -exec sha256sum {} + | sort)
expect_fail "$TMP/future/journal.jsonl: journal format version 99 is newer than this dbs-scheduler" \
  "$SCHED" serve --listen 127.0.0.1:0 --state-dir "$TMP/future"
[ "$(cd "$TMP/future" && find . -type f -exec sha256sum {} + | sort)" = "$before" ] ||
  fail "a refused state directory was changed"
expect_fail "journal format version 99 is newer" "$SCHED" backup --state-dir "$TMP/future" --out "$TMP/f.tar"
echo "backup and restore ok"
