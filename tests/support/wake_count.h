/* SPDX-License-Identifier: MIT */
/* wake_count.h — how a test proves that a waiter was woken by a message and not by its
 * re-check.
 *
 * A semaphore, a permit pool or a latch has no TTL to hint with, so its waiter also looks
 * again every DLOCK__RECHECK_MS (5 s) in case a message was lost. A bound of seconds on "it
 * returned after the release" (test_prompt_ms(), which a loaded machine does not miss) can
 * therefore not tell the two apart; the client's `wakes` counter can: it grows only when a
 * message wakes a waiter. Static inline; included by the test files that need it. */
#ifndef DLOCK_TEST_WAKE_COUNT_H
#define DLOCK_TEST_WAKE_COUNT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "dlock.h"

/* DLOCK__RECHECK_MS (src/core/dlock_int.h), which the public headers do not give: a sleeping
 * semaphore, permit or latch waiter looks again this long after its last attempt. */
#define TEST_RECHECK_MS 5000

/* The waiters a message has woken in c so far (dlock_stats.wakes). */
static inline uint64_t client_wakes(dlock_client *c) {
    dlock_stats s;
    dlock_stats_init(&s);
    assert_int_equal(dlock_client_stats(c, &s), DLOCK_OK);
    return s.wakes;
}

#endif /* DLOCK_TEST_WAKE_COUNT_H */
