# Threads per rank: --threads wins, then SLURM_CPUS_PER_TASK, then OMP_NUM_THREADS, then the
# CPUs the launcher bound the rank to, then the node's CPUs in a Slurm job (SLURM_CPUS_ON_NODE)
# or else the host's cores, shared among its ranks; a host running more threads than cores is
# warned about.
source "$(dirname "$0")/common.bash"
args=(--model lenet --epochs 1 --train-limit 64 --test-limit 64 --batch 32 --no-progress)
cores=$(nproc)
# threads_of OUTPUT: "N (why)" from rank 0's start line.
threads_of() {
  grep -E '\[rank 0\] info: host ' <<<"$1" | grep -oE '[0-9]+ TBB thread\(s\) \(.*\) of [0-9]+ available' |
    sed -E 's/ of [0-9]+ available$//'
}
run() { "$@" 2>&1 || fail "run failed: $*"; }

out=$(OMP_NUM_THREADS=1 run "$AGENT" "${args[@]}")
[ "$(threads_of "$out")" = "1 TBB thread(s) (OMP_NUM_THREADS)" ] || fail "OMP_NUM_THREADS=1: $(threads_of "$out")"
out=$(SLURM_CPUS_PER_TASK=3 OMP_NUM_THREADS=1 run "$AGENT" "${args[@]}")
[ "$(threads_of "$out")" = "3 TBB thread(s) (SLURM_CPUS_PER_TASK)" ] || fail "SLURM_CPUS_PER_TASK=3: $(threads_of "$out")"
out=$(SLURM_CPUS_PER_TASK=3 OMP_NUM_THREADS=1 run "$AGENT" "${args[@]}" --threads 2)
[ "$(threads_of "$out")" = "2 TBB thread(s) (--threads)" ] || fail "--threads 2: $(threads_of "$out")"
out=$(env -u OMP_NUM_THREADS -u SLURM_CPUS_PER_TASK -u SLURM_CPUS_ON_NODE "$AGENT" "${args[@]}" 2>&1) || fail "default run: $out"
[ "$(threads_of "$out")" = "$cores TBB thread(s) ($cores core(s) / 1 rank(s) on the host)" ] ||
  fail "default, alone: $(threads_of "$out")"
echo "alone: --threads > SLURM_CPUS_PER_TASK > OMP_NUM_THREADS > $cores cores"

# Two ranks on this host without --threads share its cores: no warning.
out=$(env -u OMP_NUM_THREADS -u SLURM_CPUS_PER_TASK -u SLURM_CPUS_ON_NODE "${MPIRUN[@]}" -np 2 "$AGENT" "${args[@]}" 2>&1) ||
  fail "2 ranks: $out"
half=$((cores / 2 > 0 ? cores / 2 : 1))
[ "$(threads_of "$out")" = "$half TBB thread(s) ($cores core(s) / 2 rank(s) on the host)" ] ||
  fail "2 ranks, default: $(threads_of "$out")"
if [ "$cores" -ge 2 ]; then
  ! grep -q "oversubscribed" <<<"$out" || fail "warned without oversubscription: $out"
fi
# Two ranks of $cores threads each: twice the cores, said once, by rank 0.
out=$(run "${MPIRUN[@]}" -np 2 "$AGENT" "${args[@]}" --threads "$cores")
grep -qF "[rank 0] warning: host $(hostname) is oversubscribed: 2 rank(s) run $((2 * cores)) TBB threads on $cores core(s)" <<<"$out" ||
  fail "no oversubscription warning: $out"
[ "$(grep -c oversubscribed <<<"$out")" -eq 1 ] || fail "the warning is not once per host: $out"
echo "2 ranks: $half thread(s) each by default; 2 x $cores threads warned about"

# In a Slurm job each rank takes the CPUs the job holds on its own node (SLURM_CPUS_ON_NODE,
# which differs from node to node), shared among the node's ranks; SLURM_CPUS_PER_TASK (one value
# for the whole job), OMP_NUM_THREADS and --threads still win, and so does the launcher's binding.
slurm() { env -u OMP_NUM_THREADS -u SLURM_CPUS_PER_TASK SLURM_CPUS_ON_NODE="$@"; }
out=$(run slurm 3 "$AGENT" "${args[@]}")
[ "$(threads_of "$out")" = "3 TBB thread(s) (SLURM_CPUS_ON_NODE: 3 CPU(s) / 1 rank(s) on the node)" ] ||
  fail "SLURM_CPUS_ON_NODE=3: $(threads_of "$out")"
out=$(run slurm 4 "${MPIRUN[@]}" -np 2 "$AGENT" "${args[@]}")
[ "$(threads_of "$out")" = "2 TBB thread(s) (SLURM_CPUS_ON_NODE: 4 CPU(s) / 2 rank(s) on the node)" ] ||
  fail "SLURM_CPUS_ON_NODE=4, 2 ranks: $(threads_of "$out")"
out=$(run slurm 3 SLURM_CPUS_PER_TASK=1 "$AGENT" "${args[@]}")
[ "$(threads_of "$out")" = "1 TBB thread(s) (SLURM_CPUS_PER_TASK)" ] ||
  fail "SLURM_CPUS_ON_NODE=3 SLURM_CPUS_PER_TASK=1: $(threads_of "$out")"
out=$(run slurm 3 OMP_NUM_THREADS=1 "$AGENT" "${args[@]}")
[ "$(threads_of "$out")" = "1 TBB thread(s) (OMP_NUM_THREADS)" ] ||
  fail "SLURM_CPUS_ON_NODE=3 OMP_NUM_THREADS=1: $(threads_of "$out")"
out=$(run slurm 3 "$AGENT" "${args[@]}" --threads 2)
[ "$(threads_of "$out")" = "2 TBB thread(s) (--threads)" ] || fail "SLURM_CPUS_ON_NODE=3 --threads 2: $(threads_of "$out")"
if [ "$cores" -ge 2 ]; then
  out=$(run slurm 3 taskset -c 0 "$AGENT" "${args[@]}")
  [ "$(threads_of "$out")" = "1 TBB thread(s) (the 1 core(s) the rank is bound to)" ] ||
    fail "SLURM_CPUS_ON_NODE=3, bound to CPU 0: $(threads_of "$out")"
fi
expect_fail "SLURM_CPUS_ON_NODE=two: expected a count from 1 to 4096" slurm two "$AGENT" "${args[@]}"
echo "in a Slurm job: the node's CPUs shared among its ranks, after the other sources"

# Every rank's start line says how it waits and why. Both ranks held to one CPU (the launcher's
# mask, as a batch system's cpuset gives) run 2 threads on 1 core: warned about.
waits_of() { grep -E '\[rank 0\] info: host ' <<<"$1" | grep -oE 'waits: .*$'; }
out=$(run taskset -c 0 "${MPIRUN[@]}" -np 2 "$AGENT" "${args[@]}" --threads 1 --wait sleep \
  --summary "$TMP/summary.json")
grep -qF "[rank 0] warning: host $(hostname) is oversubscribed: 2 rank(s) run 2 TBB threads on 1 core(s)" <<<"$out" ||
  fail "2 ranks on CPU 0: no oversubscription warning: $out"
[ "$(waits_of "$out")" = "waits: sleep (--wait sleep)" ] || fail "--wait sleep: '$(waits_of "$out")'"
python3 -c 'import json, sys; w = json.load(open(sys.argv[1]))["config"]["waiting"]
assert w == ["sleep (--wait sleep)"] * 2, w' "$TMP/summary.json" || fail "config.waiting in the summary"
echo "2 ranks held to one CPU: warned about; --wait sleep said, and recorded in the summary"

# --wait auto by the rank's CPU quota: spin without one; in a cgroup held to half a core (where
# this machine lets us make one), sleep.
out=$(run "$AGENT" "${args[@]}" --threads 1)
case $(waits_of "$out") in
  "waits: spin (auto: no CPU quota)" | "waits: "*" (auto: CPU quota of "*" core(s) for 1 thread(s))") ;;
  *) fail "--wait auto: '$(waits_of "$out")'" ;;
esac
CG=/sys/fs/cgroup/cpu
if [ "$(id -u)" = 0 ] && [ -w "$CG/cgroup.procs" ] && [ -e "$CG/cpu.cfs_quota_us" ]; then
  group="$CG/dbs-test-threads-$$"
  mkdir "$group"
  # the group empties once the agent (and an MPI singleton's helper) is gone
  remove_group() { for _ in $(seq 50); do rmdir "$group" 2>/dev/null && return 0; sleep 0.1; done; return 1; }
  trap 'remove_group || true; rm -rf "$TMP"' EXIT
  echo 100000 >"$group/cpu.cfs_period_us"
  echo 50000 >"$group/cpu.cfs_quota_us"
  out=$(sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$group" "$AGENT" "${args[@]}" --threads 1 2>&1) ||
    fail "agent in a half-core cgroup: $out"
  want="waits: sleep (auto: CPU quota of 0.50 core(s) for 1 thread(s))"
  [ "$(waits_of "$out")" = "$want" ] || fail "half a core: '$(waits_of "$out")', expected '$want'"
  remove_group || fail "cannot remove $group: $(cat "$group/cgroup.procs")"
  echo "--wait auto: $(waits_of "$out")"
else
  echo "skip: --wait auto under a quota needs root and cgroup v1's cpu controller at $CG (not here)"
fi
