/* SPDX-License-Identifier: MIT */
/* lock_helpers.h — the helpers of the lock tests (test_lock.c and the files split from it), written
 * once. Included by those test files only; everything here is static inline. */
#ifndef DLOCK_TEST_LOCK_HELPERS_H
#define DLOCK_TEST_LOCK_HELPERS_H
#include <poll.h>
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
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "core_call.h"
#include "dlock.h"
#include "harness.h"
#include "redis_fixture.h"
#include "test_util.h"

#define BUDGET_S 60

/* ---- helpers ----------------------------------------------------------------------------- */

static inline dlock_lock *new_lock(dlock_client *c, const char *name) {
    dlock_lock *l = NULL;
    ASSERT_RC(dlock_lock_new(c, name, &l), DLOCK_OK);
    return l;
}

static inline dlock_lock *new_fenced(dlock_client *c, const char *name) {
    dlock_lock *l = NULL;
    ASSERT_RC(dlock_fencedlock_new(c, name, &l), DLOCK_OK);
    return l;
}

/* Run fn(arg) on a new thread (a new owner) and wait for it. */
static inline void on_other_thread(void *(*fn)(void *), void *arg) {
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, fn, arg), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
}

#endif
