# Helpers of the cluster tests (tests/cluster/*_test.sh): bring the cluster up (skip, exit 77,
# when it cannot be built), take it down on exit, submit jobs and check their output.
set -euo pipefail
TESTS=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROOT=$(cd "$TESTS/../.." && pwd)
source "$TESTS/lib/common.bash"
BUILD=${DBS_BUILD:-$ROOT/build}
AGENT=$BUILD/agents/dbs-agent
SCHED=$BUILD/scheduler/dbs-scheduler
SBATCH_SCRIPT=$ROOT/agents/slurm/dbs.sbatch
export SLURM_CONF=$DIR/slurm/slurm.conf
# Open MPI between the namespaces: TCP on the bridge's subnet only.
export OMPI_MCA_btl=tcp,self OMPI_MCA_btl_tcp_if_include=$CLUSTER_SUBNET
export OMPI_MCA_oob_tcp_if_include=$CLUSTER_SUBNET
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export DBS_ROOT=$ROOT DBS_AGENT=$AGENT
# A small job: lenet on 600 samples, a few seconds per epoch on a quarter core.
SMALL=(--model lenet --batch 60 --train-limit 600 --test-limit 200 --seed 3 --policy dbs)

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# process_id PID: "PID STARTTIME" (clock ticks since boot), which a reused pid does not repeat;
# empty when no such process or only its zombie is left.
process_id() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
  stat=${stat##*) }  # the fields after "(comm) ", the 3rd field (state) first
  [ "${stat%% *}" != Z ] || return 0
  echo "$1 $(cut -d' ' -f20 <<<"$stat")"
}

# Claims the bed for this test: $DIR.owner holds its owner's process_id, read and written under a
# lock. Waits while another live process holds it (up to DBS_CLUSTER_WAIT s, default 300; then
# fails naming it); takes over when the owner is gone. The bed is one per machine (bridge,
# namespaces and cgroup have fixed names), so two runs on one host take turns.
test_cluster_claim() {
  local wait=${DBS_CLUSTER_WAIT:-300} owner deadline said=0
  [[ $wait =~ ^[0-9]{1,6}$ ]] || fail "DBS_CLUSTER_WAIT must be a whole number of seconds, got '$wait'"
  deadline=$((SECONDS + 10#$wait))
  while :; do
    owner=$(
      exec 9>>"$DIR.owner"
      flock 9
      read -r pid start <"$DIR.owner" || true
      if [ -n "${pid:-}" ] && [ "$pid" != $$ ] && [ "$(process_id "$pid")" = "$pid $start" ]; then
        echo "$pid"
      else
        process_id $$ >"$DIR.owner"
      fi
    )
    [ -z "$owner" ] && return 0
    if [ $said = 0 ]; then
      echo "cluster: the bed is in use by pid $owner ($(tr '\0' ' ' </proc/"$owner"/cmdline 2>/dev/null));" \
        "waiting up to $wait s" >&2
      said=1
    fi
    [ $SECONDS -lt $deadline ] || fail "the cluster bed is still in use by pid $owner"
    sleep 1
  done
}

# Cluster of $NODES nodes up for this test, down when it exits. A cluster left by an earlier run
# whose process is gone (killed before its clean-up) is taken down first: its nodes may still be
# allocated to a dead job, or be of another shape.
test_cluster_up() {
  [ -x "$AGENT" ] || { echo "cluster: skipped: no agent at $AGENT (build first)"; exit 77; }
  if [ "$(id -u)" -eq 0 ]; then
    test_cluster_claim
    if [ -e "$DIR" ] || ip link show "$CLUSTER_BRIDGE" >/dev/null 2>&1 ||
       ip netns list | grep -q '^dbsc-node'; then
      echo "cluster: taking down a cluster left by an earlier run" >&2
      "$TESTS/cluster.sh" down
    fi
  fi
  local rc=0 out
  out=$("$TESTS/cluster.sh" up 2>&1) || rc=$?
  if [ $rc -eq 77 ]; then
    echo "$out" | tail -n 1
    exit 77
  fi
  trap test_cluster_down EXIT
  [ $rc -eq 0 ] || fail "cluster up: $out"
  echo "$out"
}

# Takes the cluster down, then gives up the claim: a test waiting for the bed starts only once
# all of it is gone.
test_cluster_down() {
  "$TESTS/cluster.sh" down
  [ "$(id -u)" -eq 0 ] || return 0
  (
    exec 9>>"$DIR.owner"
    flock 9
    read -r pid _ <"$DIR.owner" || true
    if [ "${pid:-}" = $$ ]; then : >"$DIR.owner"; fi
  )
}

# node_local K PATH: PATH (under $DIR/local) as node K sees it, from the head.
node_local() { echo "$DIR/nodes/node$1/local/${2#"$DIR"/local/}"; }

# submit LOG SBATCH_ARGS... -- AGENT_ARGS...: runs dbs.sbatch to the end and returns its exit
# code; the job's log is LOG. Polls every 0.25 s: `sbatch --wait` polls at 2 s, growing to 10 s,
# which added up to a minute per test.
submit() {
  local log=$1
  shift
  local sargs=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do sargs+=("$1"); shift; done
  shift
  local id
  id=$(sbatch --parsable -o "$log" "${sargs[@]}" "$SBATCH_SCRIPT" "$@") || return 1
  id=${id%%;*}
  wait_job "$id"
}

# job_state ID: job ID's state (PENDING, RUNNING, REQUEUED, COMPLETED, ...) as slurmctld has it
# (it keeps ended jobs for MinJobAge), or nothing while it does not answer. Not squeue: it lists
# only pending, running and completing jobs, so a job requeued or ended looks the same to it,
# and a failed query looks like a job gone.
job_state() {
  local state
  state=$(scontrol -o show job "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*') || return 0
  echo "${state#JobState=}"
}

# wait_job ID: waits until job ID has ended; returns its exit code (128 + signal if killed).
# A query slurmctld does not answer is retried for 10 s before the job counts as gone.
wait_job() {
  local info state code misses=0
  while :; do
    if ! info=$(scontrol -o show job "$1" 2>/dev/null); then
      misses=$((misses + 1))
      [ "$misses" -lt 40 ] || { echo "cluster: job $1 is gone" >&2; return 1; }
      sleep 0.25
      continue
    fi
    misses=0
    state=$(grep -o 'JobState=[A-Z_]*' <<<"$info")
    case ${state#JobState=} in
      PENDING | CONFIGURING | RUNNING | COMPLETING | SUSPENDED | REQUEUED | RESIZING) sleep 0.25 ;;
      *) break ;;
    esac
  done
  code=$(grep -o ' ExitCode=[0-9]*:[0-9]*' <<<"$info")
  code=${code# ExitCode=}
  if [ "${code#*:}" != 0 ]; then return $((128 + ${code#*:})); fi
  return "${code%%:*}"
}

# job_id_of_last: the newest job's id.
job_id_of_last() { squeue -h -o %i --sort=-i | head -n 1; }

# agent_on K: pid of a dbs-agent running on node K (its cgroup), empty when none.
agent_on() {
  local pid
  for pid in $(cat "$CLUSTER_CGROUP/node$1/cgroup.procs" 2>/dev/null); do
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = dbs-agent ] && { echo "$pid"; return 0; }
  done
  return 0
}
