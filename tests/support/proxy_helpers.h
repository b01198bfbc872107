/* SPDX-License-Identifier: MIT */
/* proxy_helpers.h — the helpers of the proxy_faults tests (test_proxy_faults.c and the files split
 * from it), written once. Included by those test files only; everything here is static inline. */
#ifndef DLOCK_TEST_PROXY_HELPERS_H
#define DLOCK_TEST_PROXY_HELPERS_H
#include <pthread.h>
#include <setjmp.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <cmocka.h>

#include "core_call.h"
#include "dlock.h"
#include "fault_proxy.h"
#include "harness.h"
#include "redis_fixture.h"
#include "test_util.h"

#define BUDGET_S 60

/* ---- helpers ----------------------------------------------------------------------------- */

static inline fault_proxy *start_proxy(redis_fixture *f) {
    fault_proxy *p = NULL;
    assert_int_equal(fault_proxy_start(redis_fixture_socket(f), &p), 0);
    return p;
}

static inline dlock_lock *new_lock(dlock_client *c, const char *name) {
    dlock_lock *l = NULL;
    ASSERT_RC(dlock_lock_new(c, name, &l), DLOCK_OK);
    return l;
}

/* "<client-id>:<owner>" of the calling thread: the lock hash field of REDIS_LAYOUT.md. */
static inline void my_field(dlock_client *c, char *buf, size_t size) {
    snprintf(buf, size, "%s:%llu", dlock_client_id(c), (unsigned long long)dlock_thread_owner());
}

/* A plain synchronous hiredis connection to the proxy, replies time out after timeout_ms. */
static inline redisContext *raw_connect(fault_proxy *p, int64_t timeout_ms) {
    struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
    redisContext *ctx = redisConnectWithTimeout("127.0.0.1", fault_proxy_port(p), tv);
    assert_non_null(ctx);
    if (ctx->err)
        fail_msg("connect to the proxy: %s", ctx->errstr);
    assert_int_equal(redisSetTimeout(ctx, tv), REDIS_OK);
    return ctx;
}

/* The reply of cmd as an integer (INTEGER or a decimal STRING/STATUS), or LLONG_MIN when the
 * connection failed (no reply). */
static inline long long raw_int(redisContext *ctx, const char *cmd) {
    redisReply *r = redisCommand(ctx, cmd);
    if (!r)
        return LLONG_MIN;
    long long v = LLONG_MIN + 1;
    if (r->type == REDIS_REPLY_INTEGER)
        v = r->integer;
    else if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS)
        v = strtoll(r->str, NULL, 10);
    freeReplyObject(r);
    return v;
}

/* true if PING gets PONG on ctx. */
static inline bool raw_ping(redisContext *ctx) {
    redisReply *r = redisCommand(ctx, "PING");
    bool ok = r && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0;
    if (r)
        freeReplyObject(r);
    return ok;
}

#endif
