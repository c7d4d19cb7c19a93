# munge and Slurm on the cluster of tests/cluster/cluster.sh: one munged and slurmctld on the
# head, one slurmd per node inside the node's namespaces and cgroup (so its jobs inherit the
# node's CPU quota). Every file lives under $DIR/slurm and $DIR/munge.
SLURM_PORT_CTLD=16817
SLURM_PORT_D=16818

slurm_env() {
  echo "export SLURM_CONF=$DIR/slurm/slurm.conf"
}

slurm_write_conf() {
  local head k n=$NODES
  head=$(hostname -s)
  mkdir -p "$DIR/slurm/state" "$DIR/slurm/log"
  {
    echo "# Written by tests/cluster/cluster.sh; removed by its 'down'."
    echo "ClusterName=dbs"
    # slurmctld must find its own short hostname here.
    echo "SlurmctldHost=$head($CLUSTER_HEAD)"
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "SlurmctldPort=$SLURM_PORT_CTLD"
    echo "SlurmdPort=$SLURM_PORT_D"
    echo "AuthType=auth/munge"
    echo "CredType=cred/munge"
    echo "AuthInfo=socket=$DIR/munge/munge.socket.2"
    echo "StateSaveLocation=$DIR/slurm/state"
    echo "SlurmdSpoolDir=$DIR/nodes/%n/spool"
    # Per node: PMIx keeps its rendezvous files here, and a shared one breaks the second node.
    echo "TmpFS=$DIR/nodes/%n/tmp"
    echo "SlurmctldPidFile=$DIR/slurm/slurmctld.pid"
    echo "SlurmdPidFile=$DIR/slurm/slurmd-%n.pid"
    echo "SlurmctldLogFile=$DIR/slurm/log/slurmctld.log"
    echo "SlurmdLogFile=$DIR/slurm/log/slurmd-%n.log"
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "AccountingStorageType=accounting_storage/none"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_CPU"
    echo "MpiDefault=none"
    echo "ReturnToService=2"
    echo "SlurmctldTimeout=30"
    echo "SlurmdTimeout=30"
    echo "InactiveLimit=0"
    echo "KillWait=5"
    echo "MinJobAge=300"
    echo "SchedulerType=sched/backfill"
    echo "SlurmctldParameters=enable_configless"
    for k in $(seq "$n"); do
      echo "NodeName=node$k NodeAddr=$(cluster_addr_of "$k") CPUs=$(cluster_cpus_of "$k") State=UNKNOWN"
    done
    echo "PartitionName=dbs Nodes=node[1-$n] Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO"
  } >"$DIR/slurm/slurm.conf.new"
  mv "$DIR/slurm/slurm.conf.new" "$DIR/slurm/slurm.conf"
}

slurm_munge_up() {
  chmod 755 "$DIR"  # the nodes' users reach the socket
  python3 "$(dirname "${BASH_SOURCE[0]}")/../../munged.py" start "$DIR/munge" >/dev/null
}

# Waits up to $2 s until `sinfo` shows every node idle.
slurm_wait_idle() {
  local i want=$1 secs=$2
  for i in $(seq $((secs * 5))); do
    [ "$(SLURM_CONF=$DIR/slurm/slurm.conf sinfo -h -N -o '%t' 2>/dev/null | grep -c '^idle')" = "$want" ] &&
      return 0
    sleep 0.2
  done
  echo "cluster: Slurm nodes not idle after ${secs}s:" >&2
  SLURM_CONF=$DIR/slurm/slurm.conf sinfo -N >&2
  return 1
}

slurm_up() {
  local k conf=$DIR/slurm/slurm.conf
  [ -f "$conf" ] || slurm_write_conf
  slurm_munge_up || return 1
  if ! { [ -f "$DIR/slurm/slurmctld.pid" ] && kill -0 "$(cat "$DIR/slurm/slurmctld.pid")" 2>/dev/null; }; then
    slurmctld -f "$conf" -i || { tail -n 5 "$DIR/slurm/log/slurmctld.log" >&2; return 1; }
  fi
  for k in $(seq "$NODES"); do
    local pidf=$DIR/slurm/slurmd-node$k.pid
    [ -f "$pidf" ] && kill -0 "$(cat "$pidf")" 2>/dev/null && continue
    mkdir -p "$DIR/nodes/node$k/spool" "$DIR/nodes/node$k/tmp"
    cluster_exec "$k" slurmd -f "$conf" -N "node$k" ||
      { tail -n 5 "$DIR/slurm/log/slurmd-node$k.log" >&2; return 1; }
  done
  slurm_wait_idle "$NODES" 30
}

# slurm_running PID: true while process PID exists and has not exited (is not a zombie).
slurm_running() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [ "${stat%% *}" != Z ]
}

# KILL to every daemon at once, then waits (up to 5 s) until each has exited. `down` removes
# their state and logs right after, so there is nothing for them to save (TERM took each 1-2 s to
# exit). An exited daemon counts as gone while still a zombie: its parent is init, which may reap
# it only seconds later.
slurm_down() {
  local f pids=()
  for f in "$DIR"/slurm/slurmd-*.pid "$DIR/slurm/slurmctld.pid" "$DIR/munge/munged.pid"; do
    [ -f "$f" ] || continue
    local pid
    pid=$(cat "$f")
    kill -KILL "$pid" 2>/dev/null && pids+=("$pid")
  done
  for _ in $(seq 50); do
    local alive=0
    for pid in "${pids[@]}"; do slurm_running "$pid" && alive=1; done
    [ $alive -eq 0 ] && break
    sleep 0.05
  done
  return 0
}

slurm_status() {
  [ -f "$DIR/slurm/slurm.conf" ] || { echo "  slurm: not started"; return 0; }
  SLURM_CONF=$DIR/slurm/slurm.conf sinfo -N -o '  %N %t %c' || return 1
}
