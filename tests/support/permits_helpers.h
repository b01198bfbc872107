/* SPDX-License-Identifier: MIT */
/* permits_helpers.h — the helpers of the permits tests (test_permits.c and the files split from
 * it), written once. Included by those test files only; everything here is static inline. */
#ifndef DLOCK_TEST_PERMITS_HELPERS_H
#define DLOCK_TEST_PERMITS_HELPERS_H
#include <ctype.h>
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
#include "dlock/adapters/libev.h"
#include "harness.h"
#include "redis_fixture.h"
#include "test_util.h"

#define BUDGET_S 60
#define NO_LEASE_SCORE 922337203685477LL

/* ---- helpers ----------------------------------------------------------------------------- */

static inline dlock_permits *new_permits(dlock_client *c, const char *name) {
    dlock_permits *p = NULL;
    ASSERT_RC(dlock_permits_new(c, name, &p), DLOCK_OK);
    return p;
}

static inline int64_t available_of(dlock_permits *p) {
    int64_t n = INT64_MIN;
    ASSERT_RC(dlock_permits_available(p, &n), DLOCK_OK);
    return n;
}

/* The server's clock (TIME), in ms since the epoch. */
static inline int64_t server_time_ms(redis_fixture *f) {
    redisReply *r = redis_fixture_cmd(f, "TIME");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 2);
    int64_t ms =
        strtoll(r->element[0]->str, NULL, 10) * 1000 + strtoll(r->element[1]->str, NULL, 10) / 1000;
    freeReplyObject(r);
    return ms;
}

static inline bool is_lower_hex_32(const char *s) {
    if (strlen(s) != 32)
        return false;
    for (int i = 0; i < 32; i++)
        if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
            return false;
    return true;
}

static inline void bytes_to_hex(const char *bytes, size_t len, char *out) {
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < len; i++) {
        out[2 * i] = digits[(unsigned char)bytes[i] >> 4];
        out[2 * i + 1] = digits[(unsigned char)bytes[i] & 15];
    }
    out[2 * len] = '\0';
}

/* The "{N}:timeout" sorted set as read back: members as hex, scores as numbers. */
typedef struct zentry {
    char hex[33];
    size_t raw_len;
    long long score;
} zentry;

static inline size_t timeout_set(redis_fixture *f, const char *key, zentry *out, size_t cap) {
    const char *argv[] = {"ZRANGE", key, "0", "-1", "WITHSCORES"};
    size_t lens[] = {6, strlen(key), 1, 2, 10};
    redisReply *r = redis_fixture_cmd_argv(f, 5, argv, lens);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    size_t n = r->elements / 2;
    assert_true(n <= cap);
    for (size_t i = 0; i < n; i++) {
        redisReply *m = r->element[2 * i], *s = r->element[2 * i + 1];
        out[i].raw_len = m->len;
        if (m->len == 16)
            bytes_to_hex(m->str, 16, out[i].hex);
        else
            snprintf(out[i].hex, sizeof(out[i].hex), "<%zu bytes>", m->len);
        out[i].score = strtoll(s->str, NULL, 10);
    }
    freeReplyObject(r);
    return n;
}

/* Waits until the server's clock is past ms (a lease end read from the sorted set). */
static inline void wait_server_time_past(redis_fixture *f, long long ms) {
    bool past = false;
    POLL_UNTIL(past, server_time_ms(f) > ms, test_slack_ms(10000));
    assert_true(past);
}

/* ---- a blocking acquire on its own thread ------------------------------------------------ */

typedef struct waiter {
    dlock_permits *p;
    int64_t wait_ms;
    int64_t lease_ms;
    dlock_permit_id id;
    blocking_call call;
} waiter;

static inline int waiter_acquire(void *arg) {
    waiter *w = arg;
    return dlock_permits_acquire(w->p, w->wait_ms, w->lease_ms, &w->id);
}

/* Starts w's acquire on a new thread and returns once it sleeps as a waiter: subscribed,
 * and both of its attempts ran. */
static inline void start_waiter_and_let_it_sleep(redis_fixture *f, const char *channel, waiter *w) {
    blocking_call_start_asleep(&w->call, waiter_acquire, w, f, (asleep_sign){channel, 1, 2, NULL});
}

#endif
