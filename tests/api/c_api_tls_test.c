/* The C ABI's dbs_remote and dbs_planner_fallback, compiled as C, against
 * dbs-scheduler serve over TLS (tests/api/c_api_tls.sh starts it and makes the files): two ranks
 * on two threads, one epoch with fake timings. With the CA that signed the daemon's certificate
 * the next plan is the daemon's (fallback cause none); with another CA it is the embedded
 * fallback's (cause outage; the log line is checked by the script). Every bad field is
 * DBS_ERROR_CONFIG naming the field (DBS_ERROR_INPUT for a NULL handle).
 * Usage: test-c-api-tls ADDRESS CA OTHER_CA JOB_KEY NOT_PEM. Exit 0 passes. */
#include <dbs/dbs.h>
#include <stdio.h>
#include <string.h>

#include "c_ranks.h"

/* EXPECT_ERROR(call, status, text): call returns status and dbs_last_error() holds text. */
#define EXPECT_ERROR(call, status, text)                                           \
  do {                                                                             \
    const dbs_status got_ = (call);                                                \
    EXPECT(got_ == (status));                                                      \
    if (strstr(dbs_last_error(), (text)) == NULL) {                                \
      fprintf(stderr, "%s:%d: '%s' not in '%s'\n", __FILE__, __LINE__, (text),     \
              dbs_last_error());                                                   \
      ++failures;                                                                  \
    }                                                                              \
  } while (0)

typedef struct {
  int rank;
  const char* address;
  const char* ca;
  const char* key;
  const char* job;
  dbs_status status;
  char message[512];
  char source[64];
  int batch[kWorld];
  int fallback; /* dbs_planner_fallback's cause after the epoch end (API 1.3) */
} rank_args;

/* One epoch of 8 steps (rank 1 three times slower) under a planner of the daemon at address,
 * over TLS with ca, registering with the job key; the next plan and its source into a. */
static void* run_rank(void* arg) {
  rank_args* a = (rank_args*)arg;
  dbs_settings* s = NULL;
  dbs_remote* remote = NULL;
  dbs_planner* p = NULL;
  dbs_plan plan;
  int step;
  dbs_settings_create(&s);
  dbs_settings_set_policy(s, "dbs-rate");
  dbs_settings_set_samples_per_epoch(s, 1000);
  dbs_remote_create(&remote);
  if (dbs_remote_set_address(remote, a->address) != DBS_OK ||
      dbs_remote_set_job(remote, a->job) != DBS_OK ||
      dbs_remote_set_token_file(remote, a->key) != DBS_OK ||
      dbs_remote_set_timeouts(remote, 10, 2) != DBS_OK ||
      dbs_remote_set_tls_ca(remote, a->ca) != DBS_OK ||
      dbs_remote_set_auth(remote, "token") != DBS_OK) {
    a->status = DBS_ERROR_INTERNAL;
    snprintf(a->message, sizeof a->message, "setting up the remote: %s", dbs_last_error());
    dbs_remote_destroy(remote);
    dbs_settings_destroy(s);
    return NULL;
  }
  a->status = dbs_planner_create(s, a->rank, kWorld, allgather, &a->rank, remote, &p);
  dbs_remote_destroy(remote); /* the planner keeps what it needs */
  dbs_settings_destroy(s);
  if (a->status != DBS_OK) {
    snprintf(a->message, sizeof a->message, "%s", dbs_last_error());
    return NULL;
  }
  dbs_planner_plan(p, &plan);
  for (step = 0; step < 8; ++step) {
    const int b = plan.batch[a->rank];
    dbs_planner_step(p, b, b * (a->rank == 0 ? 0.001 : 0.003), 0.01);
  }
  a->status = dbs_planner_end_epoch(p);
  if (a->status == DBS_OK) {
    dbs_planner_plan(p, &plan);
    snprintf(a->source, sizeof a->source, "%s", plan.source);
    a->fallback = -1;
    dbs_planner_fallback(p, &a->fallback, NULL);
    memcpy(a->batch, plan.batch, sizeof a->batch);
  } else {
    snprintf(a->message, sizeof a->message, "%s", dbs_last_error());
  }
  dbs_planner_destroy(p, 1);
  return NULL;
}

/* Both ranks planned epoch 1 from `source`, a valid plan of the global batch. */
static void expect_planned(const rank_args* args, const char* source) {
  int r;
  for (r = 0; r < kWorld; ++r) {
    if (args[r].status != DBS_OK) fprintf(stderr, "rank %d: %s\n", r, args[r].message);
    EXPECT(args[r].status == DBS_OK);
    EXPECT(strcmp(args[r].source, source) == 0);
    EXPECT(args[r].batch[0] + args[r].batch[1] == 128);
    EXPECT(args[r].batch[0] == args[0].batch[0]);
    printf("rank %d: next plan %d %d (%s)\n", r, args[r].batch[0], args[r].batch[1],
           args[r].source);
  }
}

int main(int argc, char** argv) {
  rank_args args[kWorld];
  dbs_remote* remote = NULL;
  dbs_settings* s = NULL;
  dbs_planner* p = NULL;
  int r, major = 0, minor = 0;
  if (argc != 6) {
    fprintf(stderr, "usage: %s ADDRESS CA OTHER_CA JOB_KEY NOT_PEM\n", argv[0]);
    return 2;
  }
  dbs_api_version(&major, &minor);
  EXPECT(major == 2 && minor >= 0);

  /* The right CA: the daemon plans epoch 2. */
  memset(args, 0, sizeof args);
  for (r = 0; r < kWorld; ++r) {
    args[r].rank = r;
    args[r].address = argv[1];
    args[r].ca = argv[2];
    args[r].key = argv[4];
    args[r].job = "c-api-tls";
  }
  run_world(run_rank, args, sizeof *args);
  expect_planned(args, "daemon");
  EXPECT(args[0].batch[1] < args[0].batch[0]); /* the slow rank 1 got less */
  for (r = 0; r < kWorld; ++r) EXPECT(args[r].fallback == DBS_FALLBACK_NONE);

  /* A CA that did not sign the daemon's certificate: the embedded policy plans epoch 2. */
  for (r = 0; r < kWorld; ++r) {
    memset(args[r].source, 0, sizeof args[r].source);
    args[r].ca = argv[3];
  }
  run_world(run_rank, args, sizeof *args);
  expect_planned(args, "embedded-fallback");
  for (r = 0; r < kWorld; ++r) EXPECT(args[r].fallback == DBS_FALLBACK_OUTAGE);

  /* Bad fields, each named. */
  EXPECT(dbs_remote_create(&remote) == DBS_OK);
  EXPECT_ERROR(dbs_remote_set_tls_ca(remote, "/nonexistent/ca.pem"), DBS_ERROR_CONFIG,
               "tls_ca /nonexistent/ca.pem: cannot read the file");
  EXPECT_ERROR(dbs_remote_set_tls_ca(remote, argv[5]), DBS_ERROR_CONFIG, "tls_ca ");
  EXPECT(strstr(dbs_last_error(), ": no PEM CA certificate (") != NULL);
  EXPECT_ERROR(dbs_remote_set_auth(remote, "kerberos"), DBS_ERROR_CONFIG,
               "auth 'kerberos': must be auto, token or munge");
  if (dbs_has_munge()) {
    EXPECT(dbs_remote_set_auth(remote, "munge") == DBS_OK);
  } else {
    EXPECT_ERROR(dbs_remote_set_auth(remote, "munge"), DBS_ERROR_CONFIG,
                 "auth 'munge': this dbs is built without munge");
  }
  EXPECT_ERROR(dbs_remote_set_address(remote, "no-port"), DBS_ERROR_CONFIG, "address 'no-port'");
  EXPECT_ERROR(dbs_remote_set_timeouts(remote, 0, 2), DBS_ERROR_CONFIG, "timeout_s 0: must be > 0");
  EXPECT_ERROR(dbs_remote_set_timeouts(remote, 10, -1), DBS_ERROR_CONFIG,
               "connect_timeout_s -1: must be > 0");
  EXPECT_ERROR(dbs_remote_set_auth(NULL, "auto"), DBS_ERROR_INPUT, "remote is NULL");
  EXPECT(dbs_remote_set_tls_ca(remote, argv[2]) == DBS_OK);
  EXPECT(dbs_remote_set_tls_ca(remote, "") == DBS_OK); /* back to plain TCP */
  /* A job and, for auth token, a job key: refused when the planner is made, on one rank here. */
  EXPECT(dbs_remote_set_address(remote, argv[1]) == DBS_OK);
  dbs_settings_create(&s);
  EXPECT_ERROR(dbs_planner_create(s, 0, 1, NULL, NULL, remote, &p), DBS_ERROR_CONFIG,
               "job: the daemon at ");
  EXPECT(dbs_remote_set_job(remote, "c-api-tls") == DBS_OK);
  EXPECT(dbs_remote_set_auth(remote, "token") == DBS_OK);
  EXPECT_ERROR(dbs_planner_create(s, 0, 1, NULL, NULL, remote, &p), DBS_ERROR_CONFIG,
               "auth 'token' needs token_file");
  EXPECT(p == NULL);
  /* No remote: the embedded policy. */
  EXPECT(dbs_planner_create(s, 0, 1, NULL, NULL, NULL, &p) == DBS_OK);
  dbs_planner_destroy(p, 1);
  dbs_settings_destroy(s);
  dbs_remote_destroy(remote);

  if (failures == 0) printf("c api tls: all checks passed\n");
  return failures == 0 ? 0 : 1;
}
