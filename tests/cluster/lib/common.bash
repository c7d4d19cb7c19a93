# Shared by tests/cluster/*.sh: where the cluster lives and how to run things on its nodes.
DIR=${DBS_CLUSTER_DIR:-/run/dbs-cluster}
NODES=${DBS_CLUSTER_NODES:-3}
QUOTAS=${DBS_CLUSTER_QUOTAS:-1.0,0.5,0.25}
RATES=${DBS_CLUSTER_RATES:-1gbit}
CPUS=${DBS_CLUSTER_CPUS:-1}
CLUSTER_BRIDGE=dbsc0
CLUSTER_SUBNET=10.213.0.0/24
CLUSTER_HEAD=10.213.0.1
CLUSTER_CGROUP_ROOT=/sys/fs/cgroup/cpu
CLUSTER_CGROUP=$CLUSTER_CGROUP_ROOT/dbs-cluster

# The I-th (1-based) element of a comma-separated list, cycling.
cluster_nth() {
  local IFS=,
  local -a v=($1)
  echo "${v[$((($2 - 1) % ${#v[@]}))]}"
}
cluster_quota_of() { cluster_nth "$QUOTAS" "$1"; }
cluster_rate_of() { cluster_nth "$RATES" "$1"; }
cluster_cpus_of() { cluster_nth "$CPUS" "$1"; }

# Says what is wrong with DBS_CLUSTER_CPUS and returns 1 unless every entry is a whole number
# from 1 to this machine's CPUs (slurmd drains a node declared with more CPUs than it finds).
cluster_check_cpus() {
  local c have
  have=$(nproc --all)
  for c in ${CPUS//,/ }; do
    if ! [[ $c =~ ^[0-9]+$ ]] || [ "$c" -lt 1 ] || [ "$c" -gt "$have" ]; then
      echo "cluster: DBS_CLUSTER_CPUS=$CPUS: '$c' is not a CPU count from 1 to $have (this machine's CPUs)" >&2
      return 1
    fi
  done
}
cluster_addr_of() { echo "10.213.0.$((10 + $1))"; }

# Says what is missing (last line) and returns 1 when the cluster cannot be built here.
cluster_require() {
  local c
  if [ "$(id -u)" -ne 0 ]; then
    echo "cluster: skipped: needs root (network namespaces, cgroups, Slurm)"
    return 1
  fi
  if [ "${DBS_CLUSTER_SLURM:-1}" = 1 ]; then
    source "$(dirname "${BASH_SOURCE[0]}")/../../../agents/setup.sh"
    dbs_setup_cluster_packages >&2 || {
      echo "cluster: skipped: could not install ${DBS_CLUSTER_PACKAGES[*]}"
      return 1
    }
  fi
  for c in ip tc nsenter unshare mountpoint python3; do
    command -v "$c" >/dev/null || { echo "cluster: skipped: needs the command $c"; return 1; }
  done
  if [ ! -w "$CLUSTER_CGROUP_ROOT/cgroup.procs" ] || [ ! -e "$CLUSTER_CGROUP_ROOT/cpu.cfs_quota_us" ]; then
    echo "cluster: skipped: needs the cgroup v1 cpu controller at $CLUSTER_CGROUP_ROOT (writable)"
    return 1
  fi
  if ! ip link add dbsc-probe type bridge 2>/dev/null; then
    echo "cluster: skipped: cannot create a bridge (ip link add type bridge)"
    return 1
  fi
  ip link del dbsc-probe
  if ! tc qdisc add dev lo root tbf rate 10gbit burst 1mb latency 50ms 2>/dev/null &&
     ! tc qdisc show dev lo | grep -q tbf; then
    echo "cluster: skipped: tc has no tbf qdisc"
    return 1
  fi
  tc qdisc del dev lo root 2>/dev/null
  return 0
}

# cluster_in_net K CMD...: CMD in node K's network namespace only.
cluster_in_net() {
  local k=$1
  shift
  nsenter --net="/run/netns/dbsc-node$k" -- "$@"
}

# cluster_exec K CMD...: CMD on node K: its network, hostname, mounts and CPU quota. (Not `ip
# netns exec`: it remounts /sys, which hides the cgroup tree.)
cluster_exec() {
  local k=$1
  shift
  [ -e "/run/netns/dbsc-node$k" ] || { echo "cluster: no node$k (is the cluster up?)" >&2; return 2; }
  nsenter --net="/run/netns/dbsc-node$k" --uts="$DIR/ns/node$k.uts" --mount="$DIR/ns/node$k.mnt" --wd="$PWD" \
    -- sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CLUSTER_CGROUP/node$k" "$@"
}

# Kills every process in a cgroup folder and waits (up to 5 s) until it is empty.
cluster_kill_cgroup() {
  local cg=$1 i
  [ -f "$cg/cgroup.procs" ] || return 0
  for i in $(seq 50); do
    # Read, not `[ -s ]`: cgroupfs files have size 0 whatever they hold.
    [ -n "$(cat "$cg/cgroup.procs" 2>/dev/null)" ] || return 0
    xargs -r kill -9 <"$cg/cgroup.procs" 2>/dev/null
    sleep 0.1
  done
  echo "cluster: processes left in $cg: $(tr '\n' ' ' <"$cg/cgroup.procs")" >&2
}
