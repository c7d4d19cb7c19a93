/* What the C ABI tests share: EXPECT, and two ranks on two threads whose allgather meets over a
 * barrier. Included by one test file each (static definitions). */
#ifndef DBS_TESTS_API_C_RANKS_H
#define DBS_TESTS_API_C_RANKS_H

#include <pthread.h>
#include <stdio.h>
#include <string.h>

static int failures = 0;
#define EXPECT(cond)                                                     \
  do {                                                                   \
    if (!(cond)) {                                                       \
      fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                        \
    }                                                                    \
  } while (0)

/* A two-rank allgather over a barrier: each rank writes its bytes into a shared buffer, all
 * wait, all copy it out, all wait again before the buffer is reused. user: the rank (int*). */
enum { kWorld = 2, kMaxBytes = 4096 };
static pthread_barrier_t barrier;
static unsigned char shared[kWorld * kMaxBytes];

static int allgather(void* user, const void* in, size_t bytes, void* out) {
  const int rank = *(const int*)user;
  if (bytes > kMaxBytes) return 1;
  memcpy(shared + (size_t)rank * bytes, in, bytes);
  pthread_barrier_wait(&barrier);
  memcpy(out, shared, kWorld * bytes);
  pthread_barrier_wait(&barrier);
  return 0;
}

/* run_rank on kWorld threads, thread r given (char*)args + r * arg_size; returns when all end. */
static void run_world(void* (*run_rank)(void*), void* args, size_t arg_size) {
  pthread_t t[kWorld];
  int r;
  pthread_barrier_init(&barrier, NULL, kWorld);
  for (r = 0; r < kWorld; ++r) pthread_create(&t[r], NULL, run_rank, (char*)args + r * arg_size);
  for (r = 0; r < kWorld; ++r) pthread_join(t[r], NULL);
  pthread_barrier_destroy(&barrier);
}

#endif
