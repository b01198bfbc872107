/* SPDX-License-Identifier: MIT */
/* fairlock_helpers.h — the helpers of the fairlock tests (test_fairlock.c and the files split from
 * it), written once. Included by those test files only; everything here is static inline. */
#ifndef DLOCK_TEST_FAIRLOCK_HELPERS_H
#define DLOCK_TEST_FAIRLOCK_HELPERS_H
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
#define FIELD_MAX 128

/* ---- helpers ----------------------------------------------------------------------------- */

static inline dlock_lock *new_fair(dlock_client *c, const char *name) {
    dlock_lock *l = NULL;
    ASSERT_RC(dlock_fairlock_new(c, name, &l), DLOCK_OK);
    return l;
}

/* The keys of a name without '{' (REDIS_LAYOUT.md: prefixed(...)). */
static inline void queue_key(const char *name, char *buf, size_t size) {
    snprintf(buf, size, "redisson_lock_queue:{%s}", name);
}

/* dlock's own deadlines of its waiters (server clock); Redisson's chained scores live in
 * redisson_lock_timeout:{N}. */
static inline void waiters_key(const char *name, char *buf, size_t size) {
    snprintf(buf, size, "{%s}:fair_waiters", name);
}

static inline void waiter_channel(const char *name, const char *field, char *buf, size_t size) {
    snprintf(buf, size, "redisson_lock__channel:{%s}:%s", name, field);
}

/* The queue of name as "field,field," ("" when empty or absent). */
static inline void queue_dump(redis_fixture *f, const char *name, char *buf, size_t size) {
    char key[256];
    queue_key(name, key, sizeof(key));
    redisReply *r = redis_fixture_cmd(f, "LRANGE %s 0 -1", key);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    buf[0] = '\0';
    for (size_t i = 0; i < r->elements; i++) {
        size_t used = strlen(buf);
        snprintf(buf + used, size - used, "%s,", r->element[i]->str);
    }
    freeReplyObject(r);
}

static inline long long queue_len(redis_fixture *f, const char *name) {
    char key[256];
    queue_key(name, key, sizeof(key));
    return redis_fixture_int(f, "LLEN %s", key);
}

/* A score of field in the sorted set key, or -1 if it is not there. */
static inline long long score_of(redis_fixture *f, const char *key, const char *field) {
    redisReply *r = redis_fixture_cmd(f, "ZSCORE %s %s", key, field);
    assert_non_null(r);
    long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;
    freeReplyObject(r);
    return v;
}

/* The dlock waiter's deadline (ms, server clock) in {N}:fair_waiters, or -1 if it is not
 * there. */
static inline long long deadline_of(redis_fixture *f, const char *name, const char *field) {
    char key[256];
    waiters_key(name, key, sizeof(key));
    return score_of(f, key, field);
}

/* The waiter's score in Redisson's redisson_lock_timeout:{N}, or -1 if it is not there. */
static inline long long redisson_score_of(redis_fixture *f, const char *name, const char *field) {
    char key[256];
    snprintf(key, sizeof(key), "redisson_lock_timeout:{%s}", name);
    return score_of(f, key, field);
}

/* The server's clock (TIME) in ms: what fair.lua scores deadlines with. */
static inline long long server_now_ms(redis_fixture *f) {
    redisReply *r = redis_fixture_cmd(f, "TIME");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 2);
    long long ms = atoll(r->element[0]->str) * 1000 + atoll(r->element[1]->str) / 1000;
    freeReplyObject(r);
    return ms;
}

/* How many waiter channels of name have a subscriber. */
static inline long long channels_of(redis_fixture *f, const char *name) {
    char pattern[128];
    snprintf(pattern, sizeof(pattern), "redisson_lock__channel:{%s}:*", name);
    return subscribed_channels_matching(f, pattern);
}

/* ---- a waiting thread -------------------------------------------------------------------- */

static atomic_int turns; /* acquisitions so far among a test's waiters */

typedef struct waiter {
    dlock_client *c;
    dlock_lock *l;
    int64_t wait_ms;  /* DLOCK_FOREVER or ms */
    int64_t lease_ms; /* 0: 30000 */
    int64_t hold_ms;  /* how long it holds before releasing */
    /* set by the thread */
    char field[FIELD_MAX];
    atomic_bool field_ready;
    int rc, release_rc;
    int turn; /* 1-based order of acquisition among the test's waiters */
    int64_t acquired_us, returned_ms;
} waiter;

static inline void *waiter_run(void *arg) {
    waiter *w = arg;
    owner_field(w->c, dlock_thread_owner(), w->field, sizeof(w->field));
    atomic_store(&w->field_ready, true);
    w->rc = dlock_lock_try_acquire(w->l, w->wait_ms, w->lease_ms > 0 ? w->lease_ms : 30000);
    w->acquired_us = test_now_us();
    w->returned_ms = w->acquired_us / 1000;
    if (w->rc == DLOCK_OK) {
        w->turn = atomic_fetch_add(&turns, 1) + 1;
        test_sleep_ms(w->hold_ms);
        w->release_rc = dlock_lock_release(w->l);
    }
    return NULL;
}

/* Starts w and returns once its field is in name's queue. */
static inline pthread_t start_queued_waiter(redis_fixture *f, const char *name, waiter *w) {
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, waiter_run, w), 0);
    bool ok = false;
    POLL_UNTIL(ok, atomic_load(&w->field_ready), slack_ms(3000));
    assert_true(ok);
    char q[8192];
    POLL_UNTIL(ok, (queue_dump(f, name, q, sizeof(q)), strstr(q, w->field) != NULL),
               slack_ms(3000));
    if (!ok)
        fail_msg("waiter %s never showed in the queue [%s]", w->field, q);
    return t;
}

/* Starts w and returns once it sleeps as a waiter: in the queue, subscribed to its own
 * channel, and both of its attempts (the first, and the one after the subscription was
 * confirmed) ran. */
static inline pthread_t start_sleeping_waiter(redis_fixture *f, const char *name, waiter *w) {
    long long scripts_before = script_calls(f);
    pthread_t t = start_queued_waiter(f, name, w);
    char channel[512];
    waiter_channel(name, w->field, channel, sizeof(channel));
    bool asleep = false;
    POLL_UNTIL(asleep, numsub(f, channel) == 1 && script_calls(f) >= scripts_before + 2,
               slack_ms(3000));
    assert_true(asleep);
    return t;
}

#endif
