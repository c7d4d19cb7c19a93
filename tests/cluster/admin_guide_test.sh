#!/usr/bin/env bash
# Cluster test: the operator's steps of docs/guides/scheduler.md, scheduler-state.md and
# concepts/security.md, in their order, on the bed. `meson install` into a staging root (the
# guide's /usr/local under $ROOTFS); the token, the head's TLS certificate and the agents' CA as
# the TLS section makes them; the daemon started by the installed unit's own ExecStart line, as
# systemd would run it (a user of its own, the token and TLS key as credentials, the settings of
# /etc/default/dbs-scheduler: --auth token,munge, TLS, --keep-finished 1). alice and bob submit
# agents/slurm/dbs.sbatch with no token; the admin's /status and /metrics show alice's job and
# her uid, hers show counts only. A backup taken while her job runs, restored into a fresh
# directory, serves the /status of that moment. The upgrade (stop, install, start) on a journal
# of format version 0 migrates it and her job goes on through the daemon; when it finishes,
# --keep-finished 1 prunes bob's trace without a restart. The daemon's log has the lines the
# guide names. The guide's /etc and /var/lib are $DIR/etc and $DIR/var/lib here.
export DBS_CLUSTER_NODES=3 DBS_CLUSTER_QUOTAS=1.0,0.5,0.5
source "$(dirname "$0")/lib/test.bash"
test_cluster_up
ROOTFS=$DIR/root                    # meson install --destdir
ETC=$DIR/etc/dbs                    # /etc/dbs
CA_PUBLIC=$DIR/etc/dbs-ca.pem       # /etc/dbs-ca.pem, readable by every user
STATE=$DIR/var/lib/dbs-scheduler    # STATE_DIRECTORY
CREDS=$DIR/run/credentials/dbs-scheduler.service  # CREDENTIALS_DIRECTORY
SOCK=$DIR/munge/munge.socket.2
DAEMON_PID=
RESTORED_PID=
USERS_MADE=()
cleanup() {
  local p u
  for p in $DAEMON_PID $RESTORED_PID; do kill -9 "$p" 2>/dev/null || true; done
  for u in "${USERS_MADE[@]}"; do userdel -f "$u" 2>/dev/null || true; done
  test_cluster_down
}
trap cleanup EXIT
for u in alice bob dbs-scheduler; do
  id "$u" >/dev/null 2>&1 && fail "user $u exists already; this test creates and removes it"
  useradd --no-create-home --shell /bin/bash "$u" || fail "useradd $u"
  USERS_MADE+=("$u")
done

# -- Install as a service.
meson install -C "$BUILD" --no-rebuild --destdir "$ROOTFS" >"$DIR/install.log" 2>&1 ||
  fail "meson install: $(tail -n 5 "$DIR/install.log")"
unit=$ROOTFS/usr/local/lib/systemd/system/dbs-scheduler.service
[ -f "$unit" ] || fail "meson install put no unit at /usr/local/lib/systemd/system"
BIN=$ROOTFS/usr/local/bin
[ -x "$BIN/dbs-scheduler" ] || fail "no dbs-scheduler in /usr/local/bin"
install -d -m 0700 "$ETC"
head -c 32 /dev/urandom | base64 >"$ETC/token" && chmod 600 "$ETC/token"

# -- TLS: the CA and the head's certificate, made with the guide's openssl steps.
python3 "$ROOT/tests/tls_certs.py" "$ETC" "DNS:head,IP:$CLUSTER_HEAD,IP:127.0.0.1" 825 >/dev/null ||
  fail "tests/tls_certs.py could not make the head's certificate"
install -m 0644 "$ETC/ca.pem" "$CA_PUBLIC"

# -- The daemon as systemd starts it: what LoadCredential= and StateDirectory= provide, then the
# unit's ExecStart line with its variables, as the unit's user with UMask=0077.
install -d -m 0700 -o dbs-scheduler "$CREDS" "$STATE" "$DIR/run/dbs"
install -m 0400 -o dbs-scheduler "$ETC/token" "$CREDS/token"
install -m 0400 -o dbs-scheduler "$ETC/server.pem" "$CREDS/tls-cert"
install -m 0400 -o dbs-scheduler "$ETC/server.key" "$CREDS/tls-key"
execstart=$(sed -n '/^ExecStart=/,/[^\\]$/p' "$unit" | sed 's/^ExecStart=//; s/\\$//' | tr '\n' ' ')
execstart=$ROOTFS$execstart
# /etc/default/dbs-scheduler (the ready file is the test's, to learn the ports)
SERVE_ARGS="--auth token,munge --munge-socket $SOCK --tls-cert $CREDS/tls-cert"
SERVE_ARGS+=" --tls-key $CREDS/tls-key --keep-finished 1 --ready-file $DIR/run/dbs/ready.json"
# start_service: runs ExecStart in the background; sets DAEMON_PID, LISTEN, HTTP.
start_service() {
  rm -f "$DIR/run/dbs/ready.json"
  setpriv --reuid=dbs-scheduler --regid=dbs-scheduler --clear-groups env DBS_LISTEN="$CLUSTER_HEAD:${AGENT_PORT:-0}" \
    DBS_HTTP="127.0.0.1:${HTTP_PORT:-0}" DBS_SERVE_ARGS="$SERVE_ARGS" \
    CREDENTIALS_DIRECTORY="$CREDS" STATE_DIRECTORY="$STATE" \
    bash -c 'umask 077 && eval "exec $0"' "$execstart" >>"$DIR/daemon.log" 2>&1 &
  DAEMON_PID=$!
  for _ in $(seq 200); do [ -s "$DIR/run/dbs/ready.json" ] && break; sleep 0.05; done
  [ -s "$DIR/run/dbs/ready.json" ] || fail "daemon not ready: $(cat "$DIR/daemon.log")"
  LISTEN=$(json_of "$DIR/run/dbs/ready.json" 'd["listen"]')
  HTTP=$(json_of "$DIR/run/dbs/ready.json" 'd["http"]')
  AGENT_PORT=${LISTEN##*:} HTTP_PORT=${HTTP##*:}
}
# stop_service: SIGTERM, as systemctl stop sends; the daemon must exit 0.
stop_service() {
  kill -TERM "$DAEMON_PID"
  local rc=0
  wait "$DAEMON_PID" || rc=$?
  DAEMON_PID=
  [ $rc -eq 0 ] || fail "the daemon exited $rc on SIGTERM: $(tail -n 5 "$DIR/daemon.log")"
}
json_of() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }
start_service
echo "== ${SECONDS} s: daemon: agents on $LISTEN, HTTP on $HTTP"

# -- munge for the users: a credential of alice's, decoded by the head's munged.
runuser -u alice -- munge -S "$SOCK" -n | unmunge -S "$SOCK" | grep -q "UID:.*alice" ||
  fail "munge does not prove alice's uid"

# -- alice and bob submit dbs.sbatch with no token, from a folder of their own: the installed
# dbs-agent on PATH, the output in that folder.
# submit_as USER [ENV...] -- SBATCH_ARGS... -- AGENT_ARGS...: prints the Slurm job id.
submit_as() {
  local user=$1 envs=() sargs=()
  shift
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  while [ "$1" != -- ]; do sargs+=("$1"); shift; done
  shift
  install -d -o "$user" "$DIR/$user"
  (cd "$DIR/$user" && runuser -u "$user" -- env -u DBS_TOKEN_FILE -u DBS_ROOT -u DBS_AGENT \
    PATH="$BIN:$PATH" DBS_SCHEDULER="$LISTEN" DBS_TLS_CA="$CA_PUBLIC" MUNGE_SOCKET="$SOCK" \
    SLURM_CONF="$SLURM_CONF" "${envs[@]}" \
    sbatch --parsable -o "$DIR/$user/job.log" "${sargs[@]}" "$SBATCH_SCRIPT" "$@")
}
# alice's job must outlast the backup, bob's job and the admin's (2 epochs each, one after the
# other on the third node) to run across the upgrade: 80 epochs, about 25 s on an idle bed.
alice_job=$(submit_as alice -- -N 2 -- --model lenet --batch 60 --train-limit 1200 \
  --test-limit 200 --seed 3 --policy dbs --epochs 80 --scheduler-timeout 30)
bob_job=$(submit_as bob -- -N 1 -- "${SMALL[@]}" --epochs 2 --scheduler-timeout 30)
echo "== ${SECONDS} s: alice: slurm job $alice_job, bob: slurm job $bob_job"
alice_trace=$STATE/traces/slurm-$alice_job.jsonl
plans_of() {  # plan records in a trace (0 before it exists)
  local n
  n=$(grep -c '"type":"plan"' "$1" 2>/dev/null) || true
  echo "${n:-0}"
}
for _ in $(seq 1200); do [ "$(plans_of "$alice_trace")" -ge 3 ] && break; sleep 0.05; done
[ "$(plans_of "$alice_trace")" -ge 3 ] ||
  { cat "$DIR/alice/job.log" "$DIR/daemon.log"; fail "the daemon planned no second epoch of alice's job"; }

# -- /status and /metrics: the admin (bearer token) and alice (no token, on the head).
admin_get() {
  curl -sf --cacert "$CA_PUBLIC" -H "Authorization: Bearer $(cat "$ETC/token")" "https://$HTTP$1"
}
user_get() { runuser -u alice -- curl -sf --cacert "$CA_PUBLIC" "https://$HTTP$1"; }
admin_get /status >"$DIR/admin-status.json" || fail "admin: no /status over HTTPS"
admin_get /metrics >"$DIR/admin-metrics.txt" || fail "admin: no /metrics"
user_get /status >"$DIR/user-status.json" || fail "alice: no /status over HTTPS"
user_get /metrics >"$DIR/user-metrics.txt" || fail "alice: no /metrics"
alice_uid=$(id -u alice)
python3 - "$DIR/admin-status.json" "$DIR/user-status.json" "slurm-$alice_job" "$alice_uid" <<'PY' ||
import json, sys
admin, user = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
job, uid = sys.argv[3], int(sys.argv[4])
mine = [j for j in admin["jobs"] if j["job"] == job]
assert mine and mine[0]["owner"] == uid, ("admin: alice's job and owner", admin["jobs"])
assert [r["host"] for r in mine[0]["ranks"]] == ["node1", "node2"], mine[0]["ranks"]
assert "jobs" not in user and user["daemon"]["jobs_running"] >= 1, user
assert job not in json.dumps(user) and "node1" not in json.dumps(user), user
print("admin sees", [(j["job"], j.get("owner"), j["state"]) for j in admin["jobs"]],
      "; alice sees jobs_running", user["daemon"]["jobs_running"], "and:", user["hidden"])
PY
  fail "who sees what on /status"
grep -q "dbs_job_ranks{job_id=\"slurm-$alice_job\"}" "$DIR/admin-metrics.txt" ||
  fail "admin: no per-job series in /metrics"
grep -q 'dbs_jobs{state="running"} [1-9]' "$DIR/user-metrics.txt" || fail "alice: no job counts in /metrics"
! grep -q "slurm-\|node[0-9]" "$DIR/user-metrics.txt" || fail "alice's /metrics names jobs or hosts"
curl -s "http://$HTTP/status" | grep -q "this port speaks HTTPS" ||
  fail "a plain http:// request is not answered 'this port speaks HTTPS'"

# -- Backup while alice's job runs, between two /status of the admin.
admin_get /status >"$DIR/status-before-backup.json"
install -d -m 0700 "$DIR/backup"
"$BIN/dbs-scheduler" backup --state-dir "$STATE" --out "$DIR/backup/dbs.tar" | tee "$DIR/backup.out"
admin_get /status >"$DIR/status-after-backup.json"
[ "$(job_state "$alice_job")" = RUNNING ] || fail "alice's job ended before the backup was taken"

# -- The admin's own job on the token, with a job id of its own, from a folder without a build.
wait_job "$bob_job" || { cat "$DIR/bob/job.log"; fail "bob's job failed"; }
install -d "$DIR/admin"
admin_job=$(cd "$DIR/admin" && env -u DBS_ROOT -u DBS_AGENT PATH="$BIN:$PATH" DBS_SCHEDULER="$LISTEN" \
  DBS_TLS_CA="$CA_PUBLIC" DBS_TOKEN_FILE="$ETC/token" DBS_JOB=nightly-1 \
  sbatch --parsable -N 1 -o "$DIR/admin/job.log" "$SBATCH_SCRIPT" "${SMALL[@]}" --epochs 2)
wait_job "$admin_job" || { cat "$DIR/admin/job.log"; fail "the admin's job failed"; }
grep -qE "refused|embedded policy" "$DIR/admin/job.log" && { cat "$DIR/admin/job.log"; fail "the admin's job was not planned by the daemon"; }
[ ! -e "$STATE/traces/slurm-$bob_job.jsonl" ] || fail "bob's trace kept past --keep-finished 1"

# -- Upgrade: stop; the journal as the daemon before format versions wrote it (no header line);
# install; start. alice's agents go on and the daemon plans her job again. The counts-only view
# names no quarantined job, not even in the file's name.
[ "$(job_state "$alice_job")" = RUNNING ] || fail "alice's job ended before the upgrade"
stop_service
head -n 1 "$STATE/journal.jsonl" | grep -q '"format":"dbs-journal"' || fail "the journal has no header"
tail -n +2 "$STATE/journal.jsonl" >"$DIR/journal.v0" && cat "$DIR/journal.v0" >"$STATE/journal.jsonl"
# and a record of a job never created, which the start quarantines into a file named after it
echo '{"type":"epoch","job":"ghost-job","epoch":0}' >>"$STATE/journal.jsonl"
meson install -C "$BUILD" --no-rebuild --destdir "$ROOTFS" >>"$DIR/install.log" 2>&1 || fail "meson install (upgrade)"
plans_before=$(plans_of "$alice_trace")
start_service
head -n 1 "$STATE/journal.jsonl" | grep -qx '{"format":"dbs-journal","version":1}' ||
  fail "the journal was not migrated: $(head -n 1 "$STATE/journal.jsonl")"
[ ! -e "$STATE/journal.v0.jsonl" ] || fail "the migration left journal.v0.jsonl"
ls "$STATE"/quarantine/ghost-job.* >/dev/null || fail "the ghost job's record was not quarantined"
user_get /status >"$DIR/user-status-2.json"
admin_get /status | grep -q '"job": "ghost-job"' || fail "the admin does not see the quarantined job"
! grep -q ghost "$DIR/user-status-2.json" || fail "alice's /status names the quarantined job: $(cat "$DIR/user-status-2.json")"
[ "$(json_of "$DIR/user-status-2.json" 'len(d["quarantined"])')" = 1 ] || fail "alice's /status does not count the quarantined file"
wait_job "$alice_job" || { cat "$DIR/alice/job.log"; fail "alice's job failed"; }
grep -q "^final: test accuracy" "$DIR/alice/job.log" || fail "alice's job did not finish"
echo "== ${SECONDS} s: alice's job: $plans_before plans before the upgrade, $(plans_of "$alice_trace") in the end"
[ "$(plans_of "$alice_trace")" -gt "$plans_before" ] ||
  { cat "$DIR/alice/job.log" "$DIR/daemon.log"; fail "the daemon planned nothing of alice's job after the upgrade"; }
grep -q "embedded policy" "$DIR/bob/job.log" && fail "bob's job fell back to the embedded policy"

# -- Retention: --keep-finished 1, alice finished last: the admin's trace is gone, without a restart.
for _ in $(seq 100); do [ -e "$STATE/traces/nightly-1.jsonl" ] || break; sleep 0.05; done
[ ! -e "$STATE/traces/nightly-1.jsonl" ] || fail "the admin's trace kept past --keep-finished 1"
[ -e "$alice_trace" ] || fail "alice's trace was removed"
admin_get /status >"$DIR/status-end.json"
[ "$(json_of "$DIR/status-end.json" '[j["job"] for j in d["jobs"]]')" = "['slurm-$alice_job']" ] ||
  fail "/status after retention: $(json_of "$DIR/status-end.json" '[j["job"] for j in d["jobs"]]')"
r=$(json_of "$DIR/status-end.json" 'd["daemon"]["retention"]["finished_kept"], d["daemon"]["retention"]["pruned_finished"] >= 1')
[ "$r" = "1 True" ] || fail "retention on /status: $(json_of "$DIR/status-end.json" 'd["daemon"]["retention"]')"
stop_service

# -- Restore into a fresh directory; a daemon on it serves the /status of the backup's moment.
"$BIN/dbs-scheduler" restore --from "$DIR/backup/dbs.tar" --state-dir "$DIR/var/lib/dbs-restored"
"$BIN/dbs-scheduler" serve --listen 127.0.0.1:0 --http 127.0.0.1:0 --token-file "$ETC/token" \
  --state-dir "$DIR/var/lib/dbs-restored" --ready-file "$DIR/ready-restored.json" \
  >"$DIR/daemon-restored.log" 2>&1 &
RESTORED_PID=$!
for _ in $(seq 200); do [ -s "$DIR/ready-restored.json" ] && break; sleep 0.05; done
rhttp=$(json_of "$DIR/ready-restored.json" 'd["http"]')
curl -sf -H "Authorization: Bearer $(cat "$ETC/token")" "http://$rhttp/status" >"$DIR/status-restored.json" ||
  fail "the restored daemon serves no /status: $(cat "$DIR/daemon-restored.log")"
kill -TERM "$RESTORED_PID"
python3 - "$DIR"/status-{before-backup,after-backup,restored}.json <<'PY' || fail "restored /status"
import json, sys
before, after, restored = (json.load(open(p)) for p in sys.argv[1:])
def jobs(s): return {j["job"]: j for j in s["jobs"]}
b, a, r = jobs(before), jobs(after), jobs(restored)
assert set(r) == set(a), (sorted(r), sorted(a))
# What the moment or the connections change; reports of an epoch not yet planned are not journalled.
moment = ("last_report_age_s", "connected", "ranks", "state", "reports")
for name, j in r.items():
    assert b[name]["plans"] <= j["plans"] <= a[name]["plans"], (name, b[name]["plans"], j["plans"], a[name]["plans"])
    assert j["reports"] <= a[name]["reports"], name
    if b[name]["plans"] == a[name]["plans"]:  # nothing happened during the backup: all the same
        same = lambda x: {k: v for k, v in x.items() if k not in moment}
        assert same(j) == same(a[name]), (name, same(j), same(a[name]))
    assert j.get("owner") == a[name].get("owner"), name
    # A rank's host is journalled with its epoch reports: none before the job's first epoch.
    assert len(j["ranks"]) == len(a[name]["ranks"]), name
    hosts = [(x["host"], y["host"]) for x, y in zip(j["ranks"], a[name]["ranks"])]
    assert all(h == ah or (h == "" and j["ran_epoch"] == 0) for h, ah in hosts), (name, hosts)
print("restored /status: jobs", {n: (j["state"], j["plans"]) for n, j in r.items()},
      "as backed up", {n: (j["state"], j["plans"]) for n, j in a.items()})
PY

# -- The log: one line per event with the UTC time, and the lines the guide names.
log=$DIR/daemon.log
bad=$(grep -cvE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z ' "$log" || true)
[ "$bad" = 0 ] || fail "$bad line(s) of the daemon's log without a UTC time: $(grep -vE '^[0-9]{4}-' "$log" | head -n 3)"
for want in "listening for agents on $CLUSTER_HEAD:$AGENT_PORT, HTTP on 127.0.0.1:$HTTP_PORT over TLS (token or munge credential required), state in $STATE" \
  "job 'slurm-$alice_job' created: 2 ranks, policy dbs, global batch 60, created with uid $alice_uid" \
  "job 'slurm-$bob_job' created: 1 ranks, policy dbs, global batch 60, created with uid $(id -u bob)" \
  "job 'nightly-1' created: 1 ranks, policy dbs, global batch 60, created with the job's key" \
  "signal SIGTERM: stopping" \
  "journal.jsonl: migrated from journal format version 0 to 1" \
  "job 'slurm-$alice_job' finished after" \
  "job 'slurm-$bob_job' pruned" \
  "job 'nightly-1' pruned"; do
  grep -qF "$want" "$log" || { cat "$log"; fail "the daemon's log has no line with: $want"; }
done
grep -E "embedded policy" "$DIR/alice/job.log" || echo "alice's agents never fell back (no epoch ended during the upgrade)"
echo "== ${SECONDS} s: admin guide ok"
