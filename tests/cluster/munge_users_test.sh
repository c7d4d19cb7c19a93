#!/usr/bin/env bash
# Cluster test: two users of the bed, alice and bob (created here, removed on exit), submit
# dbs.sbatch with no token anywhere; the daemon on the head node takes munge credentials from the
# bed's munged (serve --auth munge). alice's job is planned by the daemon and belongs to her uid;
# bob's job, given the same job id as alice's, is refused with code auth and falls back to the
# embedded policy, and the daemon's log names bob's uid and alice's job.
source "$(dirname "$0")/lib/test.bash"
test_cluster_up
EPOCHS=3
state=$DIR/daemon-munge
DAEMON_PID=
USERS_MADE=()
cleanup() {
  [ -n "$DAEMON_PID" ] && kill -9 "$DAEMON_PID" 2>/dev/null
  local u
  for u in "${USERS_MADE[@]}"; do userdel -f "$u" 2>/dev/null || true; done
  test_cluster_down
}
trap cleanup EXIT
for u in alice bob; do
  id "$u" >/dev/null 2>&1 && fail "user $u exists already; this test creates and removes it"
  useradd --no-create-home --shell /bin/bash "$u" || fail "useradd $u"
  USERS_MADE+=("$u")
done
SOCK=$DIR/munge/munge.socket.2
"$SCHED" serve --listen "$CLUSTER_HEAD:0" --auth munge --munge-socket "$SOCK" --state-dir "$state" \
  --ready-file "$DIR/ready-munge.json" >"$DIR/daemon-munge.log" 2>&1 &
DAEMON_PID=$!
for _ in $(seq 200); do [ -s "$DIR/ready-munge.json" ] && break; sleep 0.05; done
[ -s "$DIR/ready-munge.json" ] || fail "daemon not ready: $(cat "$DIR/daemon-munge.log")"
listen=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["listen"])' "$DIR/ready-munge.json")

# submit USER [ENV...]: sbatch as USER with no token; prints the Slurm job id.
submit() {
  local user=$1
  mkdir -p "$DIR/$user" && chown "$user" "$DIR/$user"
  runuser -u "$user" -- env -u DBS_TOKEN_FILE DBS_SCHEDULER="$listen" MUNGE_SOCKET="$SOCK" \
    DBS_OUT="$DIR/$user/out" SLURM_CONF="$SLURM_CONF" "${@:2}" \
    sbatch --parsable -N 2 -o "$DIR/$user/job.log" "$SBATCH_SCRIPT" "${SMALL[@]}" --epochs $EPOCHS \
    --scheduler-timeout 30
}
alice_job=$(submit alice)
wait_job "$alice_job" || true
cat "$DIR/alice/job.log"
grep -q "^final: test accuracy" "$DIR/alice/job.log" || { cat "$DIR/daemon-munge.log"; fail "alice's job did not finish"; }
grep -q "embedded policy" "$DIR/alice/job.log" && fail "alice's job fell back to the embedded policy"
alice_uid=$(id -u alice)
bob_uid=$(id -u bob)
grep -q "job 'slurm-$alice_job' created: .*created with uid $alice_uid" "$DIR/daemon-munge.log" ||
  fail "the daemon did not create alice's job as uid $alice_uid: $(cat "$DIR/daemon-munge.log")"
# bob, with alice's job id at the daemon.
bob_job=$(submit bob DBS_JOB="slurm-$alice_job")
wait_job "$bob_job" || true
cat "$DIR/bob/job.log"
grep -q "job 'slurm-$alice_job' belongs to another user, not uid $bob_uid" "$DIR/bob/job.log" ||
  fail "bob was not refused from alice's job"
grep -q "rejected .*(auth): job 'slurm-$alice_job' belongs to another user, not uid $bob_uid" \
  "$DIR/daemon-munge.log" || fail "the daemon's log does not name bob's uid and alice's job"
grep -q "uses the embedded policy" "$DIR/bob/job.log" || fail "bob's job did not fall back"
echo "munge users ok"
