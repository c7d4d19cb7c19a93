# Sourced by agents/run-local.sh and tests/run.sh: installs what is missing from Debian's
# packages (only what is missing; apt-get update at most once) and builds incrementally.
#   dbs_setup_packages        install missing packages
#   dbs_setup_test_packages   install what only the tests need (clang-format-14 for the format
#                             check); tests/run.sh calls it, the quick start's training does not
#   dbs_setup_cluster_packages  install what tests/cluster/ needs (Slurm, munge, bridge tools);
#                             only the cluster scripts call it, so the quick start pulls no Slurm
#   dbs_build DIR [ARGS...]   configure DIR once (meson ARGS), then ninja it

DBS_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DBS_PACKAGES=(
  g++ meson ninja-build pkg-config cmake
  libopenmpi-dev openmpi-bin
  libtbb-dev libeigen3-dev nlohmann-json3-dev libboost-dev libcli11-dev zlib1g-dev doctest-dev
  libmunge-dev libssl-dev openssl
  dataset-fashion-mnist
  time procps python3 curl valgrind
  python3-torch pybind11-dev python3-pybind11
)

# What the tests need beyond DBS_PACKAGES (tests/format/clang_format.sh).
DBS_TEST_PACKAGES=(clang-format-14)

# What tests/cluster/cluster.sh needs beyond DBS_PACKAGES.
DBS_CLUSTER_PACKAGES=(slurmctld slurmd slurm-client munge iproute2 bridge-utils util-linux)

dbs_setup_packages() {
  dbs_install_missing "${DBS_PACKAGES[@]}"
}

dbs_setup_test_packages() {
  dbs_install_missing "${DBS_TEST_PACKAGES[@]}"
}

dbs_setup_cluster_packages() {
  dbs_install_missing "${DBS_CLUSTER_PACKAGES[@]}"
}

# dbs_install_missing PKG...: apt-get install the packages not installed yet. Callers that run
# side by side (tests that each install what they need) take turns under one lock, and the list
# of what is missing is made again under it, so the second finds the first one's packages.
dbs_install_missing() {
  local missing
  missing=$(dbs_not_installed "$@")
  [ -z "$missing" ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "dbs: missing packages and not root; run: sudo apt-get install $missing" >&2
    return 1
  fi
  (
    flock -w 1200 9 || { echo "dbs: waited 20 minutes for $DBS_INSTALL_LOCK" >&2; exit 1; }
    missing=$(dbs_not_installed "$@")
    [ -z "$missing" ] && exit 0
    echo "dbs: installing $missing"
    # shellcheck disable=SC2086  # one word a package
    DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        -o DPkg::Lock::Timeout=600 $missing >/dev/null
  ) 9>"$DBS_INSTALL_LOCK"
}
DBS_INSTALL_LOCK=/run/lock/dbs-install.lock

# dbs_not_installed PKG...: the packages of the list dpkg does not have installed, on one line.
dbs_not_installed() {
  local p out=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || out+=("$p")
  done
  echo "${out[*]}"
}

dbs_build() {
  local dir=$1
  shift
  if [ ! -f "$DBS_ROOT/$dir/build.ninja" ]; then
    meson setup "$DBS_ROOT/$dir" "$DBS_ROOT" "$@" >"$DBS_ROOT/$dir.setup.log" 2>&1 || {
      cat "$DBS_ROOT/$dir.setup.log" >&2
      return 1
    }
    rm -f "$DBS_ROOT/$dir.setup.log"
  fi
  ninja -C "$DBS_ROOT/$dir" | grep -v '^ninja: no work to do' | tail -n 5
  return "${PIPESTATUS[0]}"
}

# mpirun as root, ranks free to use every core (no binding: TBB keeps its threads).
DBS_MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none)
