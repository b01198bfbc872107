/* SPDX-License-Identifier: MIT */
/* wake_count.h — how a test proves that a waiter was let in by a message and not by its
 * re-check.
 *
 * A semaphore, a permit pool or a latch has no TTL to hint with, so its waiter also looks
 * again every DLOCK__RECHECK_MS (5 s) in case a message was lost. A bound of seconds on "it
 * returned after the release" (test_prompt_ms(), which a loaded machine does not miss) can
 * therefore not tell the two apart. The client's `wakes` counter can, when the message found
 * the waiter asleep: it grows only when a message wakes a waiter. A message that comes while
 * the waiter's attempt is out (a loaded machine may still be busy with it) wakes nobody: the
 * waiter attempts again at once when the "busy" answer arrives. Then only the time tells,
 * and the re-check comes TEST_RECHECK_MS after the wait began at the soonest.
 * Static inline; included by the test files that need it. */
#ifndef DLOCK_TEST_WAKE_COUNT_H
#define DLOCK_TEST_WAKE_COUNT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "dlock.h"

/* DLOCK__RECHECK_MS (src/core/include/dlock_int.h), which the public headers do not give: a
 * sleeping semaphore, permit or latch waiter looks again this long after its last attempt. */
#define TEST_RECHECK_MS 5000

/* The waiters a message has woken in c so far (dlock_stats.wakes). */
static inline uint64_t client_wakes(dlock_client *c) {
    dlock_stats s;
    dlock_stats_init(&s);
    assert_int_equal(dlock_client_stats(c, &s), DLOCK_OK);
    return s.wakes;
}

/* Whether a wait of c's that began at began_ms (test_now_ms() before the call) and ended at
 * ended_ms was ended by a message, not by a re-check: a message woke a waiter of c since
 * client_wakes() said wakes_before, or the wait ended before a re-check could come. A wait
 * let in by its re-check fails both. */
static inline bool let_in_by_a_message(dlock_client *c, uint64_t wakes_before, int64_t began_ms,
                                       int64_t ended_ms) {
    return client_wakes(c) > wakes_before || ended_ms - began_ms < TEST_RECHECK_MS;
}

#endif /* DLOCK_TEST_WAKE_COUNT_H */
