# dbs-agent checks every option before MPI starts or training begins: each bad input exits 2
# with "dbs-agent: error:" and the option's name, in one short message, and no rank started (no
# log line of a rank, nothing written). Also alone and under a 2-rank mpirun.
source "$(dirname "$0")/common.bash"
touch "$TMP/file"
# expect_usage "name in the message" args...: exit 2, the message, no rank, nothing trained.
expect_usage() {
  local want=$1 out rc=0
  shift
  out=$("$AGENT" --model lenet --epochs 1 --train-limit 64 --test-limit 64 "$@" 2>&1) || rc=$?
  [ "$rc" -eq 2 ] || fail "dbs-agent $* exited $rc, want 2: $out"
  grep -q "^dbs-agent: error: " <<<"$out" || fail "dbs-agent $*: no 'dbs-agent: error:' prefix: $out"
  grep -qF -- "$want" <<<"$out" || fail "dbs-agent $*: the message does not name '$want': $out"
  ! grep -q "\[rank " <<<"$out" || fail "dbs-agent $*: a rank started before the check: $out"
  [ "${#out}" -lt 400 ] || fail "dbs-agent $*: a ${#out}-character message: $out"
  echo "ok: $* -> $(head -n 1 <<<"$out")"
}
expect_usage "--model" --model foo
expect_usage "--epochs" --epochs 0
expect_usage "--epochs" --epochs -3
expect_usage "--batch" --batch 0
expect_usage "--lr" --lr 0
expect_usage "--lr" --lr abc
expect_usage "--momentum" --momentum 1.5
expect_usage "--weight-decay" --weight-decay -1
expect_usage "--decay-epochs" --decay-epochs 0
expect_usage "--decay-factor" --decay-factor 0
expect_usage "--warmup-epochs" --warmup-epochs -1
expect_usage "--threads" --threads -1
expect_usage "--min-gain" --min-gain 2
expect_usage "--min-batch" --min-batch 0
expect_usage "--rebalance-every" --rebalance-every -1
expect_usage "--update" --update halves
expect_usage "--overlap works with --update replicated" --overlap --update sharded
expect_usage "--overlap needs --allreduce mpi" --overlap --allreduce ring
expect_usage "--overlap excludes --no-overlap" --overlap --no-overlap
expect_usage "overlap was given a disallowed flag override" --overlap=false
expect_usage "--average-every: must be >= 1, got 0" --average-every 0
expect_usage "--average-every: must be >= 1, got -4" --average-every -4
expect_usage "--average-every works with --update replicated" --average-every 4 --update sharded
expect_usage "--overlap with --average-every needs --average-after-epochs E > 0" --average-every 4 --overlap
expect_usage "--rebalance-every 6 is not a multiple of --average-every 4" --average-every 4 --rebalance-every 6
expect_usage "--average-after-epochs needs --average-every" --average-after-epochs 1
expect_usage "--average-optimizer needs --average-every" --average-optimizer mean
expect_usage "--average-optimizer" --average-every 4 --average-optimizer median
expect_usage "--scheduler-timeout" --scheduler-timeout 0
expect_usage "--train-limit" --train-limit -5
expect_usage "--policy" --policy bogus
expect_usage "--policy" --policy fixed:64,32
expect_usage "--metrics" --metrics "$TMP/metrics.txt"
expect_usage "--summary" --summary "$TMP/file/sub/summary.json"
expect_usage "--save-weights" --save-weights "$TMP/file/w.bin"
expect_usage "--trace" --trace "$TMP"
expect_usage "--checkpoint" --checkpoint "$TMP/file/ckpt"
expect_usage "--data" --data "$TMP/nowhere"
OMP_NUM_THREADS=abc expect_usage "OMP_NUM_THREADS"
SLURM_CPUS_PER_TASK=0 expect_usage "SLURM_CPUS_PER_TASK"
[ -z "$(ls "$TMP")" ] || [ "$(ls "$TMP")" = file ] || fail "a refused run wrote into $TMP: $(ls "$TMP")"

# The short range message, not CLI11's type range.
out=$("$AGENT" --epochs 0 2>&1 || true)
grep -qF -- "--epochs: must be in [1, 1e+06], got 0" <<<"$out" || fail "--epochs 0 said: $out"

# Under mpirun: every rank refuses before MPI_Init; mpirun ends with a non-zero code.
rc=0
out=$("${MPIRUN[@]}" -np 2 "$AGENT" --model foo 2>&1) || rc=$?
[ "$rc" -ne 0 ] || fail "mpirun -np 2 dbs-agent --model foo exited 0"
[ "$(grep -c "^dbs-agent: error: --model: " <<<"$out")" -eq 2 ] || fail "mpirun --model foo: $out"
! grep -q "\[rank " <<<"$out" || fail "a rank started under mpirun: $out"
echo "ok: mpirun -np 2 dbs-agent --model foo -> exit $rc, both ranks refused before MPI"
rc=0
out=$("${MPIRUN[@]}" -np 2 "$AGENT" --average-every 4 --update sharded 2>&1) || rc=$?
[ "$rc" -ne 0 ] || fail "mpirun -np 2 dbs-agent --average-every 4 --update sharded exited 0"
[ "$(grep -c "^dbs-agent: error: --average-every works with --update replicated" <<<"$out")" -eq 2 ] ||
  fail "mpirun --average-every with --update sharded: $out"
! grep -q "\[rank " <<<"$out" || fail "a rank started under mpirun: $out"
echo "ok: averaging with the sharded update refused by both ranks before MPI"

# With 2 ranks announced by the launcher, fixed: needs two sizes summing to the batch.
rc=0
out=$("${MPIRUN[@]}" -np 2 "$AGENT" --policy fixed:100,20,8 2>&1) || rc=$?
grep -q "^dbs-agent: error: --policy fixed:100,20,8 (2 rank(s))" <<<"$out" || fail "fixed: under mpirun: $out"
echo "ok: --policy checked against the launcher's 2 ranks"

# Help: grouped options, --lr-scaling lists constant, --decay-epochs counts from 1; the
# scheduler's top-level help cites a trace that exists and the state folder of the docs.
help=$("$AGENT" --help)
for group in "Data:" "Model and optimisation:" "Balance:" "Scheduler daemon:" "Output:" "Checkpoint:" "Performance:"; do
  grep -q "^$group" <<<"$help" || fail "agent --help has no group '$group'"
done
grep -A1 -- "--lr-scaling" <<<"$help" | grep -q "constant" || fail "--lr-scaling help omits constant"
grep -A1 -- "--decay-epochs" <<<"$help" | grep -q "from 1" || fail "--decay-epochs help does not count from 1"
! grep -q "0-based" <<<"$help" || fail "agent --help still says 0-based"
shelp=$("$SCHED" --help)
for trace in $(grep -o 'traces/[A-Za-z0-9_.-]*\.jsonl' <<<"$shelp"); do
  [ -f "$trace" ] || fail "dbs-scheduler --help cites $trace, which does not exist"
done
# (restore's example writes into a new folder, not the daemon's)
dirs=$( (grep -v 'restore ' <<<"$shelp" | grep -o -- '--state-dir [^ ]*'
         "$SCHED" serve --help | grep -o -- '--state-dir /[^ ]*') | sort -u)
[ "$(wc -l <<<"$dirs")" -eq 1 ] || fail "the scheduler's help names different state folders: $dirs"
grep -rqF -- "$dirs" README.md docs || fail "the help's $dirs is in neither README.md nor docs/"
echo "help checked"
