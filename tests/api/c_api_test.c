/* The C ABI (<dbs/dbs.h>), compiled as C: two ranks on two threads share an allgather over a
 * barrier; they plan two epochs with fake timings (rank 1 three times slower), read their
 * samples, and every bad input returns its status with a message naming what is at fault.
 * Exit 0 passes; each failure prints the line. */
#include <dbs/dbs.h>
#include <stdio.h>
#include <string.h>

#include "c_ranks.h"

typedef struct {
  int rank;
  int fail_policy;  /* rank 1 with another policy: the ranks disagree */
  int mode;         /* 0: two epochs; 1: re-plans every 4 steps; 2: checkpoint after epoch 1,
                       a new planner restored from it for epoch 2 */
  int replanned;    /* mode 1: rebalance reported a change, in epoch 0, source "rebalance" */
  int restored;     /* mode 2: the restored planner's state and plan equal the checkpoint's */
  dbs_status status;
  char message[512];
  int batch[kWorld];
  int64_t indices[128];
  int64_t count;
} rank_args;

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
      if (a->mode == 1 && step == 3 && epoch == 0) {
        int changed = 0;
        a->status = dbs_planner_rebalance(p, &changed);
        dbs_planner_plan(p, &plan);
        a->replanned = changed == 1 && plan.epoch == 0 && strcmp(plan.source, "rebalance") == 0 &&
                       plan.batch[1] < plan.batch[0];
      }
    }
    a->status = dbs_planner_end_epoch(p);
    if (a->status != DBS_OK) break;
    if (a->mode == 2 && epoch == 0) {
      /* The checkpoint, then a new planner in its place, restored from it. */
      double state[256], again[256];
      size_t count = 0, count_again = 0;
      int batch[kWorld];
      dbs_planner_plan(p, &plan);
      memcpy(batch, plan.batch, sizeof batch);
      dbs_planner_state(p, NULL, 0, &count);
      a->restored = count > 0 && count <= 256 &&
                    dbs_planner_state(p, state, 256, &count) == DBS_OK &&
                    dbs_planner_state(p, state, 1, &count_again) == DBS_ERROR_INPUT;
      dbs_planner_destroy(p, 0);
      dbs_settings_create(&s);
      dbs_settings_set_policy(s, "dbs-rate");
      dbs_settings_set_samples_per_epoch(s, 1000);
      a->status = dbs_planner_create(s, a->rank, kWorld, allgather, &a->rank, NULL, &p);
      dbs_settings_destroy(s);
      if (a->status != DBS_OK) break;
      a->restored = a->restored &&
                    dbs_planner_restore(p, 1, batch, 3, state, count) == DBS_ERROR_INPUT &&
                    strstr(dbs_last_error(), "a plan of 3 ranks, the job has 2") != NULL &&
                    dbs_planner_restore(p, 1, batch, kWorld, state, count) == DBS_OK &&
                    dbs_planner_state(p, again, 256, &count_again) == DBS_OK &&
                    count_again == count && memcmp(again, state, count * sizeof(double)) == 0 &&
                    dbs_planner_plan(p, &plan) == DBS_OK && plan.epoch == 1 &&
                    memcmp(plan.batch, batch, sizeof batch) == 0 &&
                    strcmp(plan.source, "restored") == 0;
    }
  }
  dbs_planner_plan(p, &plan);
  memcpy(a->batch, plan.batch, sizeof a->batch);
  dbs_step_indices(p, 1000, 5, 7, a->indices, 128, &a->count);
  snprintf(a->message, sizeof a->message, "%s", plan.source);
  dbs_planner_destroy(p, 1);
  return NULL;
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
  run_world(run_rank, args, sizeof *args);
  EXPECT(dbs_permutation(1000, 5, 2, perm) == DBS_OK);
  for (r = 0; r < kWorld; ++r) {
    EXPECT(args[r].status == DBS_OK);
    EXPECT(args[r].batch[0] == 96 && args[r].batch[1] == 32);
    EXPECT(strcmp(args[r].message, "embedded") == 0);
  }
  EXPECT(args[0].count == 78 && args[1].count == 26);
  EXPECT(args[1].count == 26 && memcmp(args[1].indices, perm + 7 * 128 + 78, 26 * sizeof(int64_t)) == 0);

  /* Re-plans inside the epoch: the first window already moves samples to rank 0; the epoch's
   * end plans from the whole epoch and comes to the same split. */
  memset(args, 0, sizeof args);
  for (r = 0; r < kWorld; ++r) {
    args[r].rank = r;
    args[r].mode = 1;
  }
  run_world(run_rank, args, sizeof *args);
  for (r = 0; r < kWorld; ++r) {
    EXPECT(args[r].status == DBS_OK);
    EXPECT(args[r].replanned);
    EXPECT(args[r].batch[0] == 96 && args[r].batch[1] == 32);
  }

  /* A checkpoint after epoch 1 and a resume from it plan epoch 2 as the uninterrupted run. */
  memset(args, 0, sizeof args);
  for (r = 0; r < kWorld; ++r) {
    args[r].rank = r;
    args[r].mode = 2;
  }
  run_world(run_rank, args, sizeof *args);
  for (r = 0; r < kWorld; ++r) {
    EXPECT(args[r].status == DBS_OK);
    EXPECT(args[r].restored);
    EXPECT(args[r].batch[0] == 96 && args[r].batch[1] == 32);
    EXPECT(strcmp(args[r].message, "embedded") == 0);
  }

  /* Ranks that disagree on the settings: both fail alike, naming the setting. */
  memset(args, 0, sizeof args);
  for (r = 0; r < kWorld; ++r) {
    args[r].rank = r;
    args[r].fail_policy = 1;
  }
  run_world(run_rank, args, sizeof *args);
  for (r = 0; r < kWorld; ++r) {
    EXPECT(args[r].status == DBS_ERROR_CONFIG);
    EXPECT(strstr(args[r].message, "rank 1 has policy 'static'") != NULL);
  }

  /* Bad input on one rank: a fixed: spec of the wrong length, a data set smaller than the
   * global batch, a missing allgather, NULL arguments. */
  dbs_settings_create(&s);
  /* A policy name is read where it is set. */
  EXPECT(dbs_settings_set_policy(s, "dbs2") == DBS_ERROR_CONFIG);
  EXPECT(strstr(dbs_last_error(), "unknown policy 'dbs2'") != NULL);
  EXPECT(dbs_settings_set_policy(s, "fixed:64,x") == DBS_ERROR_CONFIG);
  EXPECT(strstr(dbs_last_error(), "size 1 'x' is not an integer") != NULL);
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
