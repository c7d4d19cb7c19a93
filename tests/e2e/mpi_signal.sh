# SIGINT/SIGTERM on a running 2-rank job: the ranks agree to stop after the same step (even when
# only one rank got the signal), write checkpoint, summary and trace, and exit 128+signal;
# --resume continues from the next step and ends with the very weights of an uninterrupted run;
# a signal to mpirun itself (Ctrl-C, kill) reaches the ranks as SIGTERM and stops them the same
# way; a second signal ends a rank at once. Through a daemon, the agents' goodbye marks the job
# stopped at once (journalled), and the resumed job runs and finishes there.
source "$(dirname "$0")/common.bash"
DAEMON_PID=
trap '[ -n "$DAEMON_PID" ] && kill -9 "$DAEMON_PID" 2>/dev/null; rm -rf "$TMP"' EXIT
# 32 steps per epoch; rank 1 sleeps 7x its compute per step so a step lasts some milliseconds.
args=(--model lenet --epochs 2 --train-limit 1024 --test-limit 256 --batch 32 --policy static
  --disturb rank=1,factor=8)

# rank_pid MPIRUN_PID RANK: the pid of that rank (a child of mpirun).
rank_pid() {
  local p
  for p in $(pgrep -P "$1"); do
    if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2"; then
      echo "$p"
      return 0
    fi
  done
  return 1
}
# start NAME ARGS...: mpirun in the background, output in $TMP/NAME.{out,err}; sets $mp.
start() {
  local name=$1
  shift
  "${MPIRUN[@]}" -np 2 "$AGENT" "${args[@]}" --progress "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" &
  mp=$!
}
# wait_steps NAME: until rank 0's progress bar shows a few steps of epoch 1.
wait_steps() {
  for _ in $(seq 600); do
    grep -qE 'epoch 1 \[[# ]*\] +[0-9]+% +([3-9]|[1-9][0-9])/32' "$TMP/$1.out" 2>/dev/null && return 0
    kill -0 "$mp" 2>/dev/null || fail "$1 ended before training: $(cat "$TMP/$1.err")"
    sleep 0.1
  done
  fail "$1: no training progress: $(cat "$TMP/$1.out" "$TMP/$1.err")"
}
finish() {  # finish NAME: waits for mpirun, sets $rc
  rc=0
  wait "$mp" || rc=$?
  echo "$1: mpirun exited $rc"
}

# The uninterrupted reference.
"${MPIRUN[@]}" -np 2 "$AGENT" "${args[@]}" --no-progress --save-weights "$TMP/ref.bin" \
  >"$TMP/ref.out" 2>&1 || fail "reference run failed: $(cat "$TMP/ref.out")"

# 1. SIGINT to rank 1 only: both ranks stop after the same step, exit 130.
start int --checkpoint "$TMP/ck" --summary "$TMP/int/summary.json" --trace "$TMP/int/trace.jsonl" \
  --save-weights "$TMP/int/w.bin" --metrics "$TMP/int/metrics.csv"
wait_steps int
kill -INT "$(rank_pid "$mp" 1)"
finish int
[ "$rc" -eq 130 ] || fail "SIGINT: mpirun exited $rc, want 130 (the ranks' code): $(cat "$TMP/int.err")"
grep -qE '\[rank 0\] warning: stopped by SIGINT in epoch 1 after step [0-9]+; checkpoint in .*ck \(continue with --resume\)' \
  "$TMP/int.err" || fail "SIGINT: no stop message: $(cat "$TMP/int.err")"
step=$(json_get "$TMP/int/summary.json" 'd["stopped"]["step"]')
[ "$(json_get "$TMP/int/summary.json" 'd["stopped"]["signal"], d["stopped"]["epoch"]')" = "SIGINT 1" ] ||
  fail "summary: $(json_get "$TMP/int/summary.json" 'd.get("stopped")')"
[ "$step" -ge 3 ] && [ "$step" -lt 32 ] || fail "stopped after step $step of 32"
[ -s "$TMP/ck/checkpoint.bin" ] || fail "SIGINT: no checkpoint"
[ -s "$TMP/int/trace.jsonl" ] || fail "SIGINT: no trace"
[ ! -e "$TMP/int/w.bin" ] || fail "SIGINT: final weights written for a stopped run"
echo "SIGINT to rank 1: both ranks stopped after step $step of epoch 1, checkpoint, summary, trace written"

# 2. --resume continues with the next step; the result is the uninterrupted run's, bit for bit.
"${MPIRUN[@]}" -np 2 "$AGENT" "${args[@]}" --no-progress --checkpoint "$TMP/ck" --resume \
  --save-weights "$TMP/resumed.bin" --metrics "$TMP/int/metrics.csv" --summary "$TMP/resumed.json" \
  >"$TMP/resume.out" 2>"$TMP/resume.err" || fail "resume failed: $(cat "$TMP/resume.err")"
grep -qE "\[rank 0\] info: resumed from epoch 1, step $((step + 1)) of 32 \(checkpoint .*/ck, written [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z\)" \
  "$TMP/resume.err" || fail "no resume message: $(cat "$TMP/resume.err")"
read -r diff _ < <(weights_compare "$TMP/resumed.bin" "$TMP/ref.bin")
[ "$diff" = "0.0" ] || fail "resumed weights differ from the uninterrupted run's by $diff"
echo "resumed from step $((step + 1)): final weights equal the uninterrupted run's"
# The continued epoch's busy figures are unknown (its timings miss the steps before the stop):
# left out of the summary, empty in the metrics; the next epoch has them.
python3 - "$TMP/int/metrics.csv" "$TMP/resumed.json" <<'PY' || fail "busy of the continued epoch"
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [(r["epoch"], r["rank"]) for r in rows] == [("1", "0"), ("1", "1"), ("2", "0"), ("2", "1")], rows
assert [r["busy"] for r in rows[:2]] == ["", ""], rows
# (busy seconds over rank 0's epoch clock: rank 1 starts epoch 2 while rank 0 still writes the
# checkpoint, so its figure may pass 1 a little; mpi_dbs_job checks the values)
assert all(float(r["busy"]) > 0 for r in rows[2:]), rows
e1, e2 = json.load(open(sys.argv[2]))["epochs"]
assert "busy" not in e1 and "busy_ideal_s" not in e1, e1
assert len(e2["busy"]) == 2 and e2["busy_ideal_s"] > 0, e2
print("continued epoch: busy left out; epoch 2 busy", e2["busy"])
PY

# 3. SIGTERM to mpirun (what kill and Ctrl-C do): Open MPI sends the ranks SIGTERM one second
#    later (odls_base_sigkill_timeout) and SIGKILL a second after that; they stop in time.
#    6 epochs (about 1 s each on a quiet machine), so that the job is still running a second on.
start term --epochs 6 --checkpoint "$TMP/ck2" --summary "$TMP/term/summary.json"
wait_steps term
kill -TERM "$mp"
finish term
[ "$rc" -ne 0 ] || fail "SIGTERM to mpirun: exit 0"
[ "$(json_get "$TMP/term/summary.json" 'd["stopped"]["signal"]')" = SIGTERM ] ||
  fail "SIGTERM to mpirun: no stopped summary: $(cat "$TMP/term.err")"
[ -s "$TMP/ck2/checkpoint.bin" ] || fail "SIGTERM to mpirun: no checkpoint"
"${MPIRUN[@]}" -np 2 "$AGENT" "${args[@]}" --epochs 6 --no-progress --checkpoint "$TMP/ck2" --resume \
  >"$TMP/resume2.out" 2>"$TMP/resume2.err" || fail "resume after SIGTERM failed: $(cat "$TMP/resume2.err")"
grep -q "resumed from epoch" "$TMP/resume2.err" || fail "resume after SIGTERM: $(cat "$TMP/resume2.err")"
echo "SIGTERM to mpirun: mpirun exited $rc, ranks stopped with checkpoint and summary, resumed"

# 4. A second signal ends the rank at once, without waiting for the step to end. Steps of about
#    half a second here; the two signals differ (SIGINT, then SIGTERM) so that the kernel cannot
#    merge them into one pending signal, and nothing runs between the two kill calls.
start twice --checkpoint "$TMP/ck3" --summary "$TMP/twice/summary.json" --disturb rank=1,factor=40
wait_steps twice
r1=$(rank_pid "$mp" 1)
kill -INT "$r1"; kill -TERM "$r1"
finish twice
grep -q "dbs-agent: second signal: stopping at once" "$TMP/twice.err" ||
  fail "second signal: $(cat "$TMP/twice.err")"
[ "$rc" -ne 0 ] || fail "second signal: mpirun exited 0"
[ ! -e "$TMP/twice/summary.json" ] || fail "second signal: the run still finished its stop"
echo "SIGINT then SIGTERM: rank 1 ended at once, mpirun exited $rc"

# 5. Through a daemon: Ctrl-C on the job says goodbye (not done) to the daemon, which shows the
#    job stopped at once - not running, nor lost --lost-after later - and journals it, so that a
#    restarted daemon still shows it stopped; the resumed job runs there again and finishes.
start_daemon --state-dir "$TMP/state"
job_state() {
  curl -sf "http://$HTTP/status" | python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs"][0]["state"])'
}
(umask 077 && "$SCHED" job-key --token-file "$TMP/token" sig >"$TMP/sig.key")
export DBS_SCHEDULER=$LISTEN DBS_TOKEN_FILE=$TMP/sig.key
MPIRUN+=(-x DBS_SCHEDULER -x DBS_TOKEN_FILE)
start daemon --job sig --scheduler-timeout 30 --checkpoint "$TMP/ck4"
wait_steps daemon
[ "$(job_state)" = running ] || fail "daemon: job not running: $(job_state)"
kill -INT "$(rank_pid "$mp" 0)"
finish daemon
[ "$rc" -eq 130 ] || fail "daemon: mpirun exited $rc: $(cat "$TMP/daemon.err")"
[ "$(job_state)" = stopped ] || fail "daemon: job $(job_state) after its agents stopped: $(cat "$TMP/daemon.log")"
grep -qE "job 'sig' stopped by its agents in epoch [12] " "$TMP/daemon.log" || fail "daemon log: $(cat "$TMP/daemon.log")"
kill -TERM "$DAEMON_PID"
for _ in $(seq 100); do kill -0 "$DAEMON_PID" 2>/dev/null || break; sleep 0.05; done
start_daemon --state-dir "$TMP/state"
[ "$(job_state)" = stopped ] || fail "restarted daemon: job $(job_state), want stopped (journalled)"
DBS_SCHEDULER=$LISTEN "${MPIRUN[@]}" -np 2 "$AGENT" "${args[@]}" --no-progress --job sig \
  --scheduler-timeout 30 --checkpoint "$TMP/ck4" --resume >"$TMP/resume4.out" 2>&1 ||
  fail "resume through the daemon failed: $(cat "$TMP/resume4.out")"
grep -q "job 'sig' running again" "$TMP/daemon.log" || fail "daemon log: $(cat "$TMP/daemon.log")"
[ "$(job_state)" = finished ] || fail "resumed job: $(job_state) after it ended"
echo "Ctrl-C through the daemon: job stopped at once (also after a daemon restart), resumed, finished"
