/* A minimal synchronous data-parallel loop planned by dbs through its C ABI, built only from the
 * installed tree:
 *   mpicc mpi_loop.c $(pkg-config --cflags --libs dbs) -o mpi_loop
 *   mpirun -np 2 ./mpi_loop [POLICY] [EPOCHS]
 * It trains nothing: each rank takes its samples of every step from dbs, "computes" them with a
 * fake work time (rank r takes 1 + 2r ms per sample, so rank 1 is three times slower than rank
 * 0), allreduces the step's sample count (where a real loop allreduces its gradient sums) and
 * tells dbs the timing. At each epoch end dbs plans the next epoch; rank 0 prints every plan. */
#include <dbs/dbs.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { kSamples = 6000, kGlobalBatch = 128 };

/* dbs's allgather over MPI. */
static int mpi_allgather(void* user, const void* in, size_t bytes, void* out) {
  MPI_Comm comm = *(MPI_Comm*)user;
  return MPI_Allgather(in, (int)bytes, MPI_BYTE, out, (int)bytes, MPI_BYTE, comm) == MPI_SUCCESS
             ? 0
             : 1;
}

/* Ends the job on every rank when a dbs call fails on this one (no rank is left waiting). */
static void check(dbs_status status, int rank, const char* what) {
  if (status == DBS_OK) return;
  fprintf(stderr, "rank %d: %s: %s\n", rank, what, dbs_last_error());
  MPI_Abort(MPI_COMM_WORLD, 2);
}

int main(int argc, char** argv) {
  MPI_Comm comm = MPI_COMM_WORLD;
  int rank = 0, world = 1, epoch, i, epochs = argc > 2 ? atoi(argv[2]) : 3;
  const char* policy = argc > 1 ? argv[1] : "dbs";
  long covered = 0, expected = 0;
  int64_t steps = 0, step, count = 0, indices[kGlobalBatch];
  dbs_settings* settings = NULL;
  dbs_planner* planner = NULL;
  dbs_plan plan;

  MPI_Init(&argc, &argv);
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &world);
  check(dbs_settings_create(&settings), rank, "settings");
  check(dbs_settings_set_policy(settings, policy), rank, "policy");
  check(dbs_settings_set_global_batch(settings, kGlobalBatch), rank, "global batch");
  check(dbs_settings_set_samples_per_epoch(settings, kSamples), rank, "samples");
  check(dbs_planner_create(settings, rank, world, mpi_allgather, &comm, NULL, &planner), rank,
        "planner");
  dbs_settings_destroy(settings);
  check(dbs_steps_per_epoch(planner, kSamples, &steps), rank, "steps");

  for (epoch = 0; epoch < epochs; ++epoch) {
    check(dbs_planner_plan(planner, &plan), rank, "plan");
    if (rank == 0) {
      printf("epoch %lld plan", (long long)plan.epoch + 1);
      for (i = 0; i < plan.world; ++i) printf(" %d", plan.batch[i]);
      printf(" (%s)\n", plan.source);
      fflush(stdout);
    }
    for (step = 0; step < steps; ++step) {
      long n = 0, sum = 0;
      check(dbs_step_indices(planner, kSamples, 42, step, indices, kGlobalBatch, &count), rank,
            "indices");
      n = (long)count; /* a real loop trains on samples indices[0, count) here */
      MPI_Allreduce(&n, &sum, 1, MPI_LONG, MPI_SUM, comm);
      covered += sum;
      check(dbs_planner_step(planner, (int)count, (double)count * (1 + 2 * rank) * 1e-3, 0.0), rank,
            "step");
    }
    expected += kSamples;
    check(dbs_planner_end_epoch(planner), rank, "end of epoch");
  }
  check(dbs_planner_plan(planner, &plan), rank, "plan");
  if (rank == 0) {
    printf("final plan");
    for (i = 0; i < plan.world; ++i) printf(" %d", plan.batch[i]);
    printf(" (%s)\n", plan.source);
    printf("%s: %ld of %ld samples trained\n", covered == expected ? "ok" : "MISMATCH", covered,
           expected);
  }
  dbs_planner_destroy(planner, 1);
  MPI_Finalize();
  return covered == expected ? 0 : 1;
}
