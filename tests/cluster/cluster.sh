#!/usr/bin/env bash
# A heterogeneous cluster on this machine (root needed):
#   tests/cluster/cluster.sh up | down | status | exec NODE CMD... | env
# Nodes node1..nodeN are network namespaces (dbsc-nodeK) on the bridge dbsc0 (10.213.0.0/24; the
# head, this machine's root namespace, is 10.213.0.1, nodeK is 10.213.0.(10+K)), each with its own
# hostname (a UTS namespace), its own mount namespace in which $DIR/local is the node's private
# folder $DIR/nodes/nodeK/local, a CPU quota (a cgroup the node's processes run in), a tbf rate
# limit on its link and the CPU count slurm.conf declares for it (and its cgroup's cpu.shares, 1024
# per CPU). Slurm (slurmctld on the head, one slurmd per node) and munge run on top. Nothing is sent
# outside the bridge's subnet. `up` is idempotent for the same shape (nodes, quotas, rates, CPUs,
# Slurm) and refuses, exit 1, when a cluster of another shape is up; `down` removes every namespace,
# link, cgroup, daemon, mount and file `up` made. When a requirement is missing, `up` says which and
# exits 77 (the cluster tests skip); a bad DBS_CLUSTER_CPUS exits 2. The tests claim the bed first
# (see lib/test.bash): $DIR.owner names the test process using it.
# Environment:
#   DBS_CLUSTER_NODES   number of nodes (default 3)
#   DBS_CLUSTER_QUOTAS  CPU quota of each node in cores, comma-separated, cycled (1.0,0.5,0.25)
#   DBS_CLUSTER_RATES   tbf rate of each node's link, comma-separated, cycled (1gbit)
#   DBS_CLUSTER_CPUS    CPUs slurm.conf declares for each node, comma-separated, cycled, each
#                       at most this machine's CPUs (1); e.g. 2,1 for nodes of different sizes
#   DBS_CLUSTER_DIR     state folder (default /run/dbs-cluster)
#   DBS_CLUSTER_SLURM   0 = do not start munge and Slurm (default 1)
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib/common.bash"
source "$HERE/lib/slurm.bash"

usage() {
  sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

# cluster_node_up K: namespace, link, hostname, mount namespace, cgroup of node K.
cluster_node_up() {
  local k=$1 name=node$1 ns=dbsc-node$1 veth=dbsc-v$1
  local quota rate
  quota=$(cluster_quota_of "$k")
  rate=$(cluster_rate_of "$k")
  mkdir -p "$DIR/nodes/$name/local" "$DIR/nodes/$name/tmp"
  if ! ip netns list | grep -qw "$ns"; then
    ip netns add "$ns" || return 1
  fi
  if ! ip link show "$veth" >/dev/null 2>&1; then
    ip link add "$veth" type veth peer name eth0 netns "$ns" || return 1
    ip link set "$veth" master "$CLUSTER_BRIDGE" up || return 1
    cluster_in_net "$k" ip addr add "$(cluster_addr_of "$k")/24" dev eth0 || return 1
    cluster_in_net "$k" ip link set eth0 up || return 1
    cluster_in_net "$k" ip link set lo up || return 1
  fi
  # The link's rate both ways: egress of the head's side and of the node's side.
  tc qdisc replace dev "$veth" root tbf rate "$rate" burst 256kb latency 50ms || return 1
  cluster_in_net "$k" tc qdisc replace dev eth0 root tbf rate "$rate" burst 256kb latency 50ms ||
    return 1
  if [ ! -e "$DIR/ns/$name.uts" ] || ! nsenter --uts="$DIR/ns/$name.uts" true 2>/dev/null; then
    touch "$DIR/ns/$name.uts" "$DIR/ns/$name.mnt"
    unshare --uts="$DIR/ns/$name.uts" --mount="$DIR/ns/$name.mnt" --propagation private \
      sh -c "hostname $name && mount --bind '$DIR/nodes/$name/local' '$DIR/local'" || return 1
  fi
  local cg=$CLUSTER_CGROUP/$name
  mkdir -p "$cg" || return 1
  echo 100000 >"$cg/cpu.cfs_period_us" || return 1
  local us
  us=$(awk -v q="$quota" 'BEGIN { printf "%d", q * 100000 + 0.5 }')
  echo "$us" >"$cg/cpu.cfs_quota_us" || return 1
  # A node declared with more CPUs also gets the larger share of this machine when it is busy.
  echo $((1024 * $(cluster_cpus_of "$k"))) >"$cg/cpu.shares" || return 1
}

# The shape `up` builds from the environment, one line; kept in $DIR/shape.
cluster_shape() {
  echo "nodes=$NODES quotas=$QUOTAS rates=$RATES cpus=$CPUS slurm=${DBS_CLUSTER_SLURM:-1}"
}

cluster_up() {
  cluster_check_cpus || exit 2
  cluster_require || exit 77
  # Reusing a cluster built for other nodes would run on its stale slurm.conf and cgroups.
  if [ -f "$DIR/nodes.count" ]; then
    local have
    have=$(cat "$DIR/shape" 2>/dev/null || echo "unknown")
    if [ "$have" != "$(cluster_shape)" ]; then
      echo "cluster: a cluster of another shape is up in $DIR ($have; asked for $(cluster_shape));" \
        "take it down first: tests/cluster/cluster.sh down" >&2
      exit 1
    fi
  fi
  trap 'echo "cluster: up failed; removing what was built" >&2; cluster_down; exit 1' ERR
  set -E
  mkdir -p "$DIR/ns" "$DIR/local" "$DIR/nodes"
  if ! mountpoint -q "$DIR/ns"; then
    mount --bind "$DIR/ns" "$DIR/ns"
    mount --make-private "$DIR/ns"
  fi
  echo "$NODES" >"$DIR/nodes.count"
  cluster_shape >"$DIR/shape"
  if ! ip link show "$CLUSTER_BRIDGE" >/dev/null 2>&1; then
    ip link add "$CLUSTER_BRIDGE" type bridge
    ip addr add "$CLUSTER_HEAD/24" dev "$CLUSTER_BRIDGE"
    ip link set "$CLUSTER_BRIDGE" up
  fi
  mkdir -p "$CLUSTER_CGROUP"
  local k
  for k in $(seq "$NODES"); do cluster_node_up "$k"; done
  if [ "${DBS_CLUSTER_SLURM:-1}" = 1 ]; then
    slurm_up
  fi
  trap - ERR
  cluster_status
}

cluster_down() {
  local k n
  slurm_down
  n=$(cat "$DIR/nodes.count" 2>/dev/null || echo "$NODES")
  # Processes still in a node (jobs, agents, exec'd commands) go first.
  for k in $(seq "$n") $(ls "$CLUSTER_CGROUP" 2>/dev/null | sed -n 's/^node//p'); do
    cluster_kill_cgroup "$CLUSTER_CGROUP/node$k"
    rmdir "$CLUSTER_CGROUP/node$k" 2>/dev/null
    ip netns del "dbsc-node$k" 2>/dev/null
    ip link del "dbsc-v$k" 2>/dev/null
  done
  for ns in $(ip netns list | awk '/^dbsc-node/ {print $1}'); do ip netns del "$ns"; done
  rmdir "$CLUSTER_CGROUP" 2>/dev/null
  ip link del "$CLUSTER_BRIDGE" 2>/dev/null
  if [ -d "$DIR/ns" ]; then
    for f in "$DIR"/ns/*; do mountpoint -q "$f" 2>/dev/null && umount "$f"; done
    mountpoint -q "$DIR/ns" && umount "$DIR/ns"
  fi
  rm -rf "$DIR"
  return 0
}

cluster_status() {
  local k ok=0 n
  n=$(cat "$DIR/nodes.count" 2>/dev/null || echo 0)
  if [ "$n" = 0 ] || ! ip link show "$CLUSTER_BRIDGE" >/dev/null 2>&1; then
    echo "cluster: down"
    return 3
  fi
  echo "cluster: $n node(s) on $CLUSTER_BRIDGE ($CLUSTER_HEAD/24), state in $DIR"
  for k in $(seq "$n"); do
    local host quota cpus
    host=$(cluster_exec "$k" hostname 2>/dev/null) || { host="?"; ok=1; }
    quota=$(cat "$CLUSTER_CGROUP/node$k/cpu.cfs_quota_us" 2>/dev/null || echo "?")
    cpus=$(awk '{ print $1 / 1024 }' "$CLUSTER_CGROUP/node$k/cpu.shares" 2>/dev/null || echo "?")
    printf '  node%s  %-12s host %-6s quota %s us/100ms  cpus %s  link %s  local %s\n' "$k" \
      "$(cluster_addr_of "$k")" "$host" "$quota" "$cpus" "$(cluster_rate_of "$k")" \
      "$DIR/nodes/node$k/local"
  done
  slurm_status || ok=1
  return $ok
}

main() {
  case "${1:-}" in
    up) cluster_up ;;
    down) cluster_down ;;
    status) cluster_status ;;
    exec)
      [ $# -ge 3 ] || { usage >&2; exit 2; }
      local node=${2#node}
      shift 2
      cluster_exec "$node" "$@"
      ;;
    env) slurm_env ;;
    -h | --help) usage ;;
    *) usage >&2; exit 2 ;;
  esac
}

main "$@"
