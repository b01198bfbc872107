/* SPDX-License-Identifier: MIT */
/* stats_helpers.h — reading a client's dlock_client_stats() in a test: the stats now, and a
 * poll until one field satisfies a condition (the stats are written on the loop thread, so a
 * test waits for the value it asserts). Needs cmocka, core_call.h (POLL_UNTIL) and
 * test_util.h (slack_ms) included before it. */
#ifndef DLOCK_TEST_STATS_HELPERS_H
#define DLOCK_TEST_STATS_HELPERS_H

#include <stdbool.h>

#include "dlock.h"

static inline dlock_stats stats_of(dlock_client *c) {
    dlock_stats s;
    dlock_stats_init(&s);
    assert_int_equal(dlock_client_stats(c, &s), DLOCK_OK);
    return s;
}

/* Polls until field of c's stats satisfies cond (a comparison against `v`). */
#define POLL_STAT(c, field, cond)                                                                  \
    do {                                                                                           \
        bool ok_ = false;                                                                          \
        long long v = 0;                                                                           \
        POLL_UNTIL(ok_, (v = (long long)stats_of(c).field, (cond)), slack_ms(3000));               \
        if (!ok_)                                                                                  \
            fail_msg("stats." #field " = %lld, expected %s", v, #cond);                            \
    } while (0)

#endif /* DLOCK_TEST_STATS_HELPERS_H */
