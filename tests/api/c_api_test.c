/* The C ABI (<dbs/dbs.h>), compiled as C: two ranks on two threads share an allgather over a
 * barrier; they plan two epochs with fake timings (rank 1 three times slower), read their
 * samples, and every bad input returns its status with a message naming what is at fault.
 * Exit 0 passes; each failure prints the line. */
#include <dbs/dbs.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static int failures = 0;
#define EXPECT(cond)                                                  \
  do {                                                                \
    if (!(cond)) {                                                    \
      fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                     \
    }                                                                 \
  } while (0)

/* A two-rank allgather over a barrier: each rank writes its bytes into a shared buffer, all
 * wait, all copy it out, all wait again before the buffer is reused. */
enum { kWorld = 2, kMaxBytes = 4096 };
static pthread_barrier_t barrier;
static unsigned char shared[kWorld * kMaxBytes];

typedef struct {
  int rank;
  int fail_policy;  /* rank 1 with another policy: the ranks disagree */
  dbs_status status;
  char message[512];
  int batch[kWorld];
  int64_t indices[128];
  int64_t count;
} rank_args;

static int allgather(void* user, const void* in, size_t bytes, void* out) {
  const int rank = *(const int*)user;
  if (bytes > kMaxBytes) return 1;
  memcpy(shared + (size_t)rank * bytes, in, bytes);
  pthread_barrier_wait(&barrier);
  memcpy(out, shared, kWorld * bytes);
  pthread_barrier_wait(&barrier);
  return 0;
}

static void* run_rank(void* arg) {
  rank_args* a = (rank_args*)arg;
  dbs_settings* s = NULL;
  dbs_planner* p = NULL;
  dbs_plan plan;
  int epoch, step;
  dbs_settings_create(&s);
  dbs_settings_set_policy(s, a->fail_policy && a->rank == 1 ? "static" : "dbs-rate");
  dbs_settings_set_samples_per_epoch(s, 1000);
  a->status = dbs_planner_create(s, a->rank, kWorld, allgather, &a->rank, NULL, &p);
  dbs_settings_destroy(s);
  if (a->status != DBS_OK) {
    snprintf(a->message, sizeof a->message, "%s", dbs_last_error());
    return NULL;
  }
  for (epoch = 0; epoch < 2; ++epoch) {
    dbs_planner_plan(p, &plan);
    for (step = 0; step < 8; ++step) {
      const int b = plan.batch[a->rank];
      dbs_planner_step(p, b, b * (a->rank == 0 ? 0.001 : 0.003), 0.01);
    }
    a->status = dbs_planner_end_epoch(p);
    if (a->status != DBS_OK) break;
  }
  dbs_planner_plan(p, &plan);
  memcpy(a->batch, plan.batch, sizeof a->batch);
  dbs_step_indices(p, 1000, 5, 7, a->indices, 128, &a->count);
  snprintf(a->message, sizeof a->message, "%s", plan.source);
  dbs_planner_destroy(p, 1);
  return NULL;
}

static void run_world(rank_args* args) {
  pthread_t t[kWorld];
  int r;
  pthread_barrier_init(&barrier, NULL, kWorld);
  for (r = 0; r < kWorld; ++r) pthread_create(&t[r], NULL, run_rank, &args[r]);
  for (r = 0; r < kWorld; ++r) pthread_join(t[r], NULL);
  pthread_barrier_destroy(&barrier);
}

int main(void) {
  int major = -1, minor = -1, r;
  rank_args args[kWorld];
  int64_t perm[1000];
  dbs_settings* s = NULL;
  dbs_planner* p = NULL;
  int64_t steps = 0;

  dbs_api_version(&major, &minor);
  EXPECT(major == DBS_API_VERSION_MAJOR && minor == DBS_API_VERSION_MINOR);

  /* Two epochs on two ranks: the slow rank 1 gets a quarter of the batch; the last step's 104
   * samples are split 78:26, rank 1's slice being the permutation's [7*128 + 78, 1000). */
  memset(args, 0, sizeof args);
  for (r = 0; r < kWorld; ++r) args[r].rank = r;
  run_world(args);
  EXPECT(dbs_permutation(1000, 5, 2, perm) == DBS_OK);
  for (r = 0; r < kWorld; ++r) {
    EXPECT(args[r].status == DBS_OK);
    EXPECT(args[r].batch[0] == 96 && args[r].batch[1] == 32);
    EXPECT(strcmp(args[r].message, "embedded") == 0);
  }
  EXPECT(args[0].count == 78 && args[1].count == 26);
  EXPECT(args[1].count == 26 && memcmp(args[1].indices, perm + 7 * 128 + 78, 26 * sizeof(int64_t)) == 0);

  /* Ranks that disagree on the settings: both fail alike, naming the setting. */
  memset(args, 0, sizeof args);
  for (r = 0; r < kWorld; ++r) {
    args[r].rank = r;
    args[r].fail_policy = 1;
  }
  run_world(args);
  for (r = 0; r < kWorld; ++r) {
    EXPECT(args[r].status == DBS_ERROR_CONFIG);
    EXPECT(strstr(args[r].message, "rank 1 has policy 'static'") != NULL);
  }

  /* Bad input on one rank: a fixed: spec of the wrong length, a data set smaller than the
   * global batch, a missing allgather, NULL arguments. */
  dbs_settings_create(&s);
  dbs_settings_set_policy(s, "fixed:64,32,32");
  EXPECT(dbs_planner_create(s, 0, 1, NULL, NULL, NULL, &p) == DBS_ERROR_CONFIG);
  EXPECT(strstr(dbs_last_error(), "fixed:64,32,32") != NULL);
  EXPECT(p == NULL);
  dbs_settings_set_policy(s, "dbs");
  EXPECT(dbs_planner_create(s, 0, 2, NULL, NULL, NULL, &p) == DBS_ERROR_INPUT);
  EXPECT(strcmp(dbs_last_error(), "a group of 2 ranks needs an allgather") == 0);
  EXPECT(dbs_settings_set_global_batch(s, 0) == DBS_ERROR_INPUT);
  EXPECT(strstr(dbs_last_error(), "global batch 0") != NULL);
  EXPECT(dbs_planner_create(s, 0, 1, NULL, NULL, NULL, &p) == DBS_OK);
  EXPECT(strcmp(dbs_last_error(), "") == 0);
  EXPECT(dbs_steps_per_epoch(p, 100, &steps) == DBS_ERROR_INPUT);
  EXPECT(strcmp(dbs_last_error(), "the data set has 100 samples, fewer than the global batch 128") == 0);
  EXPECT(dbs_steps_per_epoch(p, 1000, &steps) == DBS_OK && steps == 8);
  EXPECT(dbs_planner_step(p, 10, -1.0, 0.0) == DBS_ERROR_INPUT);
  EXPECT(dbs_planner_plan(p, NULL) == DBS_ERROR_INPUT);
  EXPECT(strcmp(dbs_last_error(), "out is NULL") == 0);
  dbs_planner_destroy(p, 1);
  dbs_settings_destroy(s);

  if (failures == 0) printf("c api: all checks passed\n");
  return failures == 0 ? 0 : 1;
}
