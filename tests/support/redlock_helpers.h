/* SPDX-License-Identifier: MIT */
/* redlock_helpers.h — the helpers of the redlock tests (test_redlock.c and the files split from
 * it), written once. Included by those test files only; everything here is static inline. */
#ifndef DLOCK_TEST_REDLOCK_HELPERS_H
#define DLOCK_TEST_REDLOCK_HELPERS_H
#include <limits.h>
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
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "core_call.h"
#include "dlock.h"
#include "fault_proxy.h"
#include "harness.h"
#include "redis_fixture.h"
#include "test_util.h"

#define BUDGET_S 60
#define N 5
#define QUORUM 3
#define NAME "rl"

/* ---- helpers ----------------------------------------------------------------------------- */

/* The drift RedLock allows for a lease (dlock/multilock.h): lease / 100 + 2 ms. */
static inline int64_t drift_of(int64_t lease_ms) {
    return lease_ms / 100 + 2;
}

static inline long long exists_on(redis_fixture *f) {
    return redis_fixture_int(f, "EXISTS " NAME);
}

/* "rl" keys present over the masters where alive[i] (NULL: all). */
static inline long long members_present(redis_fixture *f[N], const bool *alive) {
    long long n = 0;
    for (int i = 0; i < N; i++)
        if (!alive || alive[i])
            n += exists_on(f[i]);
    return n;
}

/* The calling thread's hold count in the key's hash for client c (0 if none). */
static inline long long holds_on(redis_fixture *f, dlock_client *c) {
    char field[128];
    snprintf(field, sizeof(field), "%s:%llu", dlock_client_id(c),
             (unsigned long long)dlock_thread_owner());
    redisReply *r = redis_fixture_cmd(f, "HGET " NAME " %s", field);
    assert_non_null(r);
    long long n = r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;
    freeReplyObject(r);
    return n;
}

/* Polls until every master where alive[i] (NULL: all) has `holds` holds of the calling
 * thread through a's client on it. A quorum call returns at the quorum: the other members
 * may still be answering. */
static inline void expect_holds(redis_fixture *f[N], const masters_app *a, const bool *alive,
                                long long holds) {
    for (int i = 0; i < N; i++) {
        if (alive && !alive[i])
            continue;
        bool ok = false;
        POLL_UNTIL(ok, holds_on(f[i], a->c[i]) == holds, slack_ms(2000));
        if (!ok)
            fail_msg("master %d: %lld holds, expected %lld", i, holds_on(f[i], a->c[i]), holds);
    }
}

/* Polls until no "rl" key is left on the masters where alive[i] (NULL: all). */
static inline void expect_members_gone(redis_fixture *f[N], const bool *alive) {
    bool gone = false;
    POLL_UNTIL(gone, members_present(f, alive) == 0, slack_ms(2000));
    if (!gone)
        fail_msg("%lld member(s) still present", members_present(f, alive));
}

/* The parts of a failed acquisition's detail, "redlock: G of N members, Q needed, validity
 * V ms"; false when the detail says something else. */
static inline bool parse_round(const char *detail, int *got, long long *validity) {
    size_t g = 0, n = 0, q = 0;
    if (sscanf(detail, "redlock: %zu of %zu members, %zu needed, validity %lld ms", &g, &n, &q,
               validity) != 4)
        return false;
    *got = (int)g;
    return true;
}

#endif
