/* The C ABI of dbs: the planner, the plan, step timings and this rank's samples, for languages
 * other than C++. Opaque handles; every call returns a dbs_status, and on failure
 * dbs_last_error() (per thread) names what failed. No C++ type or exception crosses it.
 * A handle may be used by one thread at a time. Strings and arrays a call returns stay valid
 * until the next call on the same handle or its destruction.
 * The caller brings an allgather over its ranks (for instance MPI_Allgather); the calls marked
 * "collective" run it once and must be made by every rank in the same order. */
#ifndef DBS_DBS_H
#define DBS_DBS_H

#include <dbs/version.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum dbs_status {
  DBS_OK = 0,
  DBS_ERROR_INPUT = 1,   /* a value from the caller is bad (argument, report, plan, data size) */
  DBS_ERROR_CONFIG = 2,  /* the settings are invalid, or the ranks disagree on them */
  DBS_ERROR_COMM = 3,    /* the allgather or the network failed: end the job */
  DBS_ERROR_INTERNAL = 4 /* a broken invariant inside dbs (a bug), or out of memory */
} dbs_status;

/* The message of the last failed call on this thread ("" when none failed). */
const char* dbs_last_error(void);
/* The API version of the library at run time (compare DBS_API_VERSION_MAJOR/MINOR). */
void dbs_api_version(int* major, int* minor);

/* ---- settings: what the policy needs, the same on every rank ---- */
typedef struct dbs_settings dbs_settings;
/* Defaults: policy "dbs", global batch 128, samples per epoch 0 (unknown), min batch 1,
 * max batch 0 (= global batch), min gain 0.02, rebalance every 0 (per epoch). */
dbs_status dbs_settings_create(dbs_settings** out);
void dbs_settings_destroy(dbs_settings* settings);
/* "dbs" | "dbs-rate" | "static" | "fixed:b0,b1,..."; DBS_ERROR_CONFIG naming it for another
 * name or a fixed: size that is not an integer >= 1 (whether the sizes fit the world and the
 * global batch, dbs_planner_create checks). */
dbs_status dbs_settings_set_policy(dbs_settings* settings, const char* policy);
dbs_status dbs_settings_set_global_batch(dbs_settings* settings, int global_batch);
dbs_status dbs_settings_set_samples_per_epoch(dbs_settings* settings, int64_t samples);
dbs_status dbs_settings_set_batch_bounds(dbs_settings* settings, int min_batch, int max_batch);
dbs_status dbs_settings_set_min_gain(dbs_settings* settings, double min_gain);
dbs_status dbs_settings_set_rebalance_every(dbs_settings* settings, int steps);

/* ---- the way to the daemon (dbs::Remote) ----
 * An opaque handle set one field per call: a field added later is a new function, never a
 * change to a layout a program was compiled with. Each setter checks its value at once and names
 * the field in dbs_last_error(). Strings are copied. */
typedef struct dbs_remote dbs_remote;
/* No address (the embedded policy only), timeouts 10 s and 2 s, plain TCP, auth "auto". */
dbs_status dbs_remote_create(dbs_remote** out);
void dbs_remote_destroy(dbs_remote* remote);
/* HOST:PORT of dbs-scheduler serve (NULL or "" = the embedded policy only); DBS_ERROR_CONFIG
 * when it is not HOST:PORT. */
dbs_status dbs_remote_set_address(dbs_remote* remote, const char* address);
/* The job id at the daemon, the same on every rank (required with an address). */
dbs_status dbs_remote_set_job(dbs_remote* remote, const char* job);
/* The job key file (dbs-scheduler job-key), read when the planner is made. */
dbs_status dbs_remote_set_token_file(dbs_remote* remote, const char* token_file);
/* Seconds to wait for the daemon's plan at an epoch end, and per connection attempt (TLS
 * handshake included); both > 0, else DBS_ERROR_CONFIG. */
dbs_status dbs_remote_set_timeouts(dbs_remote* remote, double timeout_s, double connect_timeout_s);
/* A PEM CA file: speak TLS to the daemon and verify its certificate against this CA and the
 * HOST of the address. NULL or "" = plain TCP. DBS_ERROR_CONFIG ("tls_ca PATH: ...") when the
 * file cannot be read or holds no PEM certificate. */
dbs_status dbs_remote_set_tls_ca(dbs_remote* remote, const char* ca_file);
/* How the ranks prove who they are: "token" (the token file), "munge" (a munge credential of
 * the user running the rank; the job belongs to that uid) or "auto" (the token file when set,
 * else munge when the library has it). DBS_ERROR_CONFIG ("auth ...") for another word, and for
 * "munge" in a library built without munge (dbs_has_munge). */
dbs_status dbs_remote_set_auth(dbs_remote* remote, const char* mode);
/* munged's socket (NULL or "" = munge's default). */
dbs_status dbs_remote_set_munge_socket(dbs_remote* remote, const char* socket);
/* 1 when this library was built with munge, else 0. */
int dbs_has_munge(void);

/* ---- the planner of a job on this rank ---- */
/* The caller's allgather: every rank gives `bytes` bytes at `in`; `out` (world * bytes) gets
 * rank r's at r * bytes. Returns 0 on success, anything else on failure (DBS_ERROR_COMM). */
typedef int (*dbs_allgather_fn)(void* user, const void* in, size_t bytes, void* out);

typedef struct dbs_planner dbs_planner;
/* Collective. The planner of rank `rank` of `world` ranks: the embedded policy of settings
 * (remote NULL or without an address), or the daemon of `remote` with the embedded policy as its
 * fallback. Fails with DBS_ERROR_CONFIG on every rank when the ranks' settings differ, when any
 * rank's remote is at fault (no job, a token file or CA file that cannot be read, auth "token"
 * without a token file: that rank names the field, the others the rank), for an unknown policy
 * or a fixed: spec that does not fit the world or the global batch. A daemon that cannot be
 * reached, or whose certificate the CA does not vouch for, is no error: the embedded policy
 * plans those epochs (source "embedded-fallback") and the log says why on stderr. allgather may
 * be NULL only when world is 1. */
dbs_status dbs_planner_create(const dbs_settings* settings, int rank, int world,
                              dbs_allgather_fn allgather, void* user, const dbs_remote* remote,
                              dbs_planner** out);

/* Says goodbye to the daemon (done = 1: all epochs trained) and frees the planner. */
void dbs_planner_destroy(dbs_planner* planner, int done);

/* The plan in force, read-only; arrays have `world` entries. */
typedef struct dbs_plan {
  int64_t epoch; /* 0-based */
  int global_batch;
  int world;
  const int* batch;         /* b_i */
  const int* offset;        /* o_i */
  const double* throughput; /* v_i it was made from, samples/s (0 = unknown) */
  double predicted_epoch_s; /* 0 = unknown */
  int changed;              /* 1 if it differs from the previous epoch's plan */
  const char* reason;       /* why this plan */
  const char* source;       /* "initial", "embedded", "daemon", "embedded-fallback", "rebalance",
                             "restored" (dbs_planner_restore) */
} dbs_plan;
dbs_status dbs_planner_plan(dbs_planner* planner, dbs_plan* out);

/* One step of this rank, in seconds: samples in its slice, its work between two allreduces,
 * the allreduce including the wait for the others (see <dbs/meter.h>). */
dbs_status dbs_planner_step(dbs_planner* planner, int samples, double work_s, double comm_s);
/* Collective, at the end of an epoch: this rank's report from the steps recorded, every rank's
 * by the allgather, and the plan of the next epoch, which becomes the plan in force. */
dbs_status dbs_planner_end_epoch(dbs_planner* planner);
/* Collective, inside an epoch (every settings' rebalance_every steps): every rank's report over
 * the steps recorded since the last re-plan, and a re-plan of the rest of the epoch. *changed = 1
 * when the plan in force changed (read it with dbs_planner_plan; its epoch is the same). */
dbs_status dbs_planner_rebalance(dbs_planner* planner, int* changed);
/* For a checkpoint: the planner's estimator state. *count = its number of doubles; with capacity
 * 0 only the count is set, else state (capacity doubles) receives it (DBS_ERROR_INPUT when it
 * does not fit). Save it with the plan in force's epoch and batch sizes. */
dbs_status dbs_planner_state(const dbs_planner* planner, double* state, size_t capacity,
                             size_t* count);
/* Resume from a checkpoint: the plan in force becomes `batch` (world entries, the job's world)
 * for `epoch`, and the estimator continues from `state` (count doubles from dbs_planner_state),
 * so the next plans are those the uninterrupted run would have made. DBS_ERROR_INPUT for a plan
 * of another world or global batch or a state of another planner. */
dbs_status dbs_planner_restore(dbs_planner* planner, int64_t epoch, const int* batch, int world,
                               const double* state, size_t count);

/* ---- why the daemon's plan was not used ---- */
enum { DBS_FALLBACK_NONE = 0, DBS_FALLBACK_OUTAGE = 1, DBS_FALLBACK_FOREIGN = 2 };
/* After dbs_planner_end_epoch: why the daemon's plan of that epoch end was not used, the same
 * *cause on every rank. DBS_FALLBACK_NONE: the daemon planned, or there is no daemon;
 * DBS_FALLBACK_OUTAGE: the daemon was unreachable, late, refusing or untrusted, or the ranks held
 * different plans (carry on: the next epoch asks again); DBS_FALLBACK_FOREIGN: a rank received a
 * plan for another job, so the address is not this job's daemon or the daemon is faulty (tell
 * the user). The embedded policy's plan is in force either way. *why (why may be NULL) is what
 * the log says ("" with DBS_FALLBACK_NONE). */
dbs_status dbs_planner_fallback(dbs_planner* planner, int* cause, const char** why);

/* ---- this rank's samples ---- */
/* S = ceil(samples / global batch) steps per epoch; DBS_ERROR_INPUT when samples < B. */
dbs_status dbs_steps_per_epoch(const dbs_planner* planner, int64_t samples, int64_t* out);
/* This rank's sample indices of step `step` of the plan in force's epoch, for a data set of
 * `samples` samples shuffled with `seed` (the permutation dbs-agent uses). Writes *count indices
 * to `indices`, which holds `capacity` (the global batch is always enough). */
dbs_status dbs_step_indices(dbs_planner* planner, int64_t samples, uint64_t seed, int64_t step,
                            int64_t* indices, int64_t capacity, int64_t* count);
/* The permutation of [0, samples) of `epoch` for `seed` into out (samples entries). */
dbs_status dbs_permutation(int64_t samples, uint64_t seed, int64_t epoch, int64_t* out);

#ifdef __cplusplus
}
#endif

#endif /* DBS_DBS_H */
