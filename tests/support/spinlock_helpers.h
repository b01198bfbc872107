/* SPDX-License-Identifier: MIT */
/* spinlock_helpers.h — what the spin lock's tests (test_spinlock.c, test_cli_spin.c) read
 * back to prove that a spin lock uses no pub/sub, written once. Static inline; the caller
 * includes <cmocka.h>. */
#ifndef DLOCK_TEST_SPINLOCK_HELPERS_H
#define DLOCK_TEST_SPINLOCK_HELPERS_H

#include <stddef.h>

#include "redis_fixture.h"

/* Every pub/sub command the server ran, from clients or inside scripts (commandstats
 * counts both). */
static inline long long pubsub_calls(redis_fixture *f) {
    static const char *const fields[] = {
        "cmdstat_publish.calls",    "cmdstat_spublish.calls",   "cmdstat_subscribe.calls",
        "cmdstat_ssubscribe.calls", "cmdstat_psubscribe.calls",
    };
    long long n = 0;
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        n += redis_fixture_info_int(f, "commandstats", fields[i]);
    return n;
}

/* No channel and no pattern has a subscriber on the server. */
static inline void assert_no_subscriptions(redis_fixture *f) {
    redisReply *r = redis_fixture_cmd(f, "PUBSUB CHANNELS");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 0);
    freeReplyObject(r);
    assert_int_equal(redis_fixture_int(f, "PUBSUB NUMPAT"), 0);
}

#endif
