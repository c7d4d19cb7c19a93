# The status page in a real browser, during a job: headless Chromium renders the page the daemon
# serves while a 2-rank job runs (screenshot left in the build folder as status-page.png) and
# its DOM is checked against /status served at the same moment: the job's state and epoch, the
# table's batch sizes and throughputs, efficiency and epoch times, two charts whose step lines
# (one per rank) cover exactly the epochs that ran. Then the agents are killed (no goodbye) and
# the job turns lost on /status and the page.
# Chromium runs in a network namespace of its own with only loopback (unshare -n), on the page
# as the daemon served it (saved to a file): the browser can reach nothing, not even the daemon.
source "$(dirname "$0")/common.bash"
need_package chromium chromium
unshare -n true 2>/dev/null || { echo "skipped: cannot create a network namespace (unshare -n)"; exit 77; }
DAEMON_PID= JOB_PID=
trap '[ -n "$JOB_PID" ] && kill_tree "$JOB_PID"
      [ -n "$DAEMON_PID" ] && kill -9 "$DAEMON_PID" 2>/dev/null; rm -rf "$TMP"' EXIT
kill_tree() {  # kill_tree PID: SIGKILL to PID's descendants, then PID
  local c
  for c in $(ps -o pid= --ppid "$1"); do kill_tree "$c"; done
  kill -9 "$1" 2>/dev/null || true
}

start_daemon --lost-after 1
run_job page-job 200 --disturb rank=1,factor=3,from=2 &
JOB_PID=$!

# status: /status of the daemon into $TMP/$1.json
status() { curl -sf "http://$HTTP/status" >"$TMP/$1.json" || fail "no /status"; }
ran_epoch() { json_get "$TMP/$1.json" "([j['ran_epoch'] for j in d['jobs'] if j['job'] == 'page-job'] + [0])[0]"; }
for _ in $(seq 600); do
  status before
  [ "$(ran_epoch before)" -ge 3 ] && break
  kill -0 "$JOB_PID" 2>/dev/null || { cat "$TMP/page-job.out"; fail "the job ended early"; }
  sleep 0.1
done
[ "$(ran_epoch before)" -ge 3 ] || fail "the job did not reach epoch 3: $(cat "$TMP/before.json")"
# A page between two equal /status answers shows what /status shows.
for _ in $(seq 20); do
  status before
  curl -sf "http://$HTTP/" >"$TMP/page.xhtml" || fail "no page"
  status after
  cmp -s <(ran_epoch before) <(ran_epoch after) && break
done
[ "$(json_get "$TMP/after.json" "d['jobs'][0]['state']")" = running ] || fail "the job is not running"

chrome=(chromium --headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars
        --user-data-dir="$TMP/chromium" --window-size=1200,900)
shot=$BUILD/status-page.png
rm -f "$shot"
unshare -n "${chrome[@]}" --screenshot="$shot" "file://$TMP/page.xhtml" >"$TMP/chromium.log" 2>&1 ||
  fail "chromium screenshot failed: $(tail -5 "$TMP/chromium.log")"
unshare -n "${chrome[@]}" --dump-dom "file://$TMP/page.xhtml" >"$TMP/dom.html" 2>>"$TMP/chromium.log" ||
  fail "chromium --dump-dom failed: $(tail -5 "$TMP/chromium.log")"
python3 "$(dirname "$0")/status_page_dom.py" "$TMP/dom.html" "$TMP/after.json" "$shot" 1200 900 ||
  fail "the rendered page does not show what /status serves"

# Ctrl-C without goodbye (the agents killed): the job is lost after --lost-after 1 s.
kill_tree "$JOB_PID"
wait "$JOB_PID" 2>/dev/null || true
JOB_PID=
for _ in $(seq 100); do
  status lost
  [ "$(json_get "$TMP/lost.json" "d['jobs'][0]['state']")" = lost ] && break
  sleep 0.1
done
[ "$(json_get "$TMP/lost.json" "d['jobs'][0]['state']")" = lost ] ||
  fail "the job is not lost 10 s after its agents died: $(cat "$TMP/lost.json")"
# (saved first: grep -q would end the pipe early, and pipefail fail the curl)
curl -sf "http://$HTTP/" >"$TMP/lost.xhtml" || fail "no page"
grep -q '<p class="warning">Lost: 2 of 2 ranks not connected' "$TMP/lost.xhtml" ||
  fail "the page does not warn that the job is lost"
curl -sf "http://$HTTP/metrics" >"$TMP/lost.metrics" || fail "no /metrics"
grep -qF 'dbs_job_state{job_id="page-job",state="lost"} 1' "$TMP/lost.metrics" ||
  fail "/metrics does not show the job lost"
echo "status page ok: screenshot $shot"
