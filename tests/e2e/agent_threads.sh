# Threads per rank: --threads wins, then SLURM_CPUS_PER_TASK, then OMP_NUM_THREADS, then the
# host's cores shared among its ranks; a host running more threads than cores is warned about.
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
out=$(env -u OMP_NUM_THREADS -u SLURM_CPUS_PER_TASK "$AGENT" "${args[@]}" 2>&1) || fail "default run: $out"
[ "$(threads_of "$out")" = "$cores TBB thread(s) ($cores core(s) / 1 rank(s) on the host)" ] ||
  fail "default, alone: $(threads_of "$out")"
echo "alone: --threads > SLURM_CPUS_PER_TASK > OMP_NUM_THREADS > $cores cores"

# Two ranks on this host without --threads share its cores: no warning.
out=$(env -u OMP_NUM_THREADS -u SLURM_CPUS_PER_TASK "${MPIRUN[@]}" -np 2 "$AGENT" "${args[@]}" 2>&1) ||
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
