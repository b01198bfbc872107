/* SPDX-License-Identifier: MIT */
/* latch_helpers.h — the helpers of the latch tests (test_latch.c and the files split from
 * it), written once: a latch and its count, await's looks (plain GETs), and a blocking
 * await on its own thread left asleep as a waiter. Included by those test files only;
 * everything here is static inline. */
#ifndef DLOCK_TEST_LATCH_HELPERS_H
#define DLOCK_TEST_LATCH_HELPERS_H

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

static inline dlock_latch *new_latch(dlock_client *c, const char *name) {
    dlock_latch *l = NULL;
    ASSERT_RC(dlock_latch_new(c, name, &l), DLOCK_OK);
    return l;
}

static inline int64_t count_of(dlock_latch *l) {
    int64_t n = INT64_MIN;
    ASSERT_RC(dlock_latch_count(l, &n), DLOCK_OK);
    return n;
}

/* await's looks are plain GETs */
static inline long long get_calls(redis_fixture *f) {
    return redis_fixture_info_int(f, "commandstats", "cmdstat_get.calls");
}

/* ---- await on its own thread ------------------------------------------------------------- */

typedef struct awaiter {
    dlock_latch *l;
    int64_t wait_ms;
    blocking_call call;
} awaiter;

static inline int awaiter_await(void *arg) {
    awaiter *w = arg;
    return dlock_latch_await(w->l, w->wait_ms);
}

/* Starts w's await on a new thread and returns once it sleeps: subscribed, both of its
 * looks (the first, and the one after the subscription was confirmed) done. */
static inline void start_awaiter_and_let_it_sleep(redis_fixture *f, const char *channel,
                                                  awaiter *w) {
    blocking_call_start_asleep(&w->call, awaiter_await, w, f,
                               (asleep_sign){channel, 1, 2, get_calls});
}

#endif
