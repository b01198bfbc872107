/* SPDX-License-Identifier: MIT */
/* semaphore_helpers.h — the helpers of the semaphore tests (test_semaphore.c and the files split
 * from it), written once. Included by those test files only; everything here is static inline. */
#ifndef DLOCK_TEST_SEMAPHORE_HELPERS_H
#define DLOCK_TEST_SEMAPHORE_HELPERS_H
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core_call.h"
#include "dlock.h"
#include "dlock/adapters/libev.h"
#include "harness.h"
#include "redis_fixture.h"
#include "test_util.h"

#define BUDGET_S 60

/* ---- helpers ----------------------------------------------------------------------------- */

static inline dlock_semaphore *new_semaphore(dlock_client *c, const char *name) {
    dlock_semaphore *s = NULL;
    ASSERT_RC(dlock_semaphore_new(c, name, &s), DLOCK_OK);
    return s;
}

static inline int64_t available_of(dlock_semaphore *s) {
    int64_t n = INT64_MIN;
    ASSERT_RC(dlock_semaphore_available(s, &n), DLOCK_OK);
    return n;
}

/* ---- a blocking acquire on its own thread ------------------------------------------------ */

typedef struct waiter {
    dlock_semaphore *s;
    int64_t permits;
    int64_t wait_ms;
    blocking_call call;
} waiter;

static inline int waiter_try_acquire(void *arg) {
    waiter *w = arg;
    return dlock_semaphore_try_acquire(w->s, w->permits, w->wait_ms);
}

/* Starts w's try_acquire on a new thread and returns once it sleeps as a waiter: its
 * channel has `subscribers` subscribed clients and at least `attempts` more script calls
 * ran. */
static inline void start_waiter_and_let_it_sleep(redis_fixture *f, const char *channel, waiter *w,
                                                 long long subscribers, int attempts) {
    blocking_call_start_asleep(&w->call, waiter_try_acquire, w, f,
                               (asleep_sign){channel, subscribers, attempts, NULL});
}

#endif
