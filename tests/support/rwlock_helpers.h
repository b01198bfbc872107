/* SPDX-License-Identifier: MIT */
/* rwlock_helpers.h — the helpers of the rwlock tests (test_rwlock.c and the files split from it),
 * written once. Included by those test files only; everything here is static inline. */
#ifndef DLOCK_TEST_RWLOCK_HELPERS_H
#define DLOCK_TEST_RWLOCK_HELPERS_H
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

static inline dlock_rwlock *new_rw(dlock_client *c, const char *name) {
    dlock_rwlock *rw = NULL;
    ASSERT_RC(dlock_rwlock_new(c, name, &rw), DLOCK_OK);
    assert_non_null(rw);
    return rw;
}

#define READ(rw) dlock_rwlock_read(rw)
#define WRITE(rw) dlock_rwlock_write(rw)

/* "<client-id>:<owner>", the reader field of REDIS_LAYOUT.md. */
static inline void reader_field(dlock_client *c, uint64_t owner, char *buf, size_t size) {
    snprintf(buf, size, "%s:%llu", dlock_client_id(c), (unsigned long long)owner);
}

/* "<client-id>:<owner>:write", the writer field. */
static inline void writer_field(dlock_client *c, uint64_t owner, char *buf, size_t size) {
    snprintf(buf, size, "%s:%llu:write", dlock_client_id(c), (unsigned long long)owner);
}

/* The timeout key of read hold k: "{N}:<field>:rwlock_timeout:<k>" (no added braces when N
 * has a '{'). */
static inline void timeout_key(const char *name, const char *field, int k, char *buf, size_t size) {
    if (strchr(name, '{'))
        snprintf(buf, size, "%s:%s:rwlock_timeout:%d", name, field, k);
    else
        snprintf(buf, size, "{%s}:%s:rwlock_timeout:%d", name, field, k);
}

/* The hash key as "field=value;..." sorted as strings (HGETALL through the fixture), or
 * "<none>": an owner's writer field sorts before its reader field, and "mode" comes last. */
static inline int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static inline void hash_dump_sorted(redis_fixture *f, const char *key, char *buf, size_t size) {
    const char *argv[] = {"HGETALL", key};
    size_t lens[] = {7, strlen(key)};
    redisReply *r = redis_fixture_cmd_argv(f, 2, argv, lens);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    buf[0] = '\0';
    if (r->elements == 0)
        snprintf(buf, size, "<none>");
    size_t n = r->elements / 2;
    char **pairs = calloc(n ? n : 1, sizeof(*pairs));
    assert_non_null(pairs);
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(r->element[2 * i]->str) + strlen(r->element[2 * i + 1]->str) + 3;
        pairs[i] = malloc(len);
        assert_non_null(pairs[i]);
        snprintf(pairs[i], len, "%s=%s;", r->element[2 * i]->str, r->element[2 * i + 1]->str);
    }
    qsort(pairs, n, sizeof(*pairs), cmp_str);
    for (size_t i = 0; i < n; i++) {
        size_t used = strlen(buf);
        snprintf(buf + used, size - used, "%s", pairs[i]);
        free(pairs[i]);
    }
    free(pairs);
    freeReplyObject(r);
}

static inline long long exists(redis_fixture *f, const char *key) {
    return redis_fixture_int(f, "EXISTS %s", key);
}

static inline char *mode_of(redis_fixture *f, const char *name) {
    return redis_fixture_str(f, "HGET %s mode", name);
}

static inline void assert_mode(redis_fixture *f, const char *name, const char *want) {
    char *mode = mode_of(f, name);
    if (!want) {
        if (mode)
            fail_msg("mode of %s = %s, expected none", name, mode);
        return;
    }
    if (!mode)
        fail_msg("mode of %s: none, expected %s", name, want);
    if (strcmp(mode, want) != 0) {
        char copy[16];
        snprintf(copy, sizeof(copy), "%s", mode);
        free(mode);
        fail_msg("mode of %s = %s, expected %s", name, copy, want);
    }
    free(mode);
}

/* Keys that exist now (KEYS *: DBSIZE also counts keys that expired but were not yet
 * reclaimed). */
static inline long long live_keys(redis_fixture *f) {
    redisReply *r = redis_fixture_cmd(f, "KEYS *");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    long long n = (long long)r->elements;
    freeReplyObject(r);
    return n;
}

/* The server's clock in ms (TIME), which rw.lua's writer deadlines use. */
static inline long long server_now_ms(redis_fixture *f) {
    redisReply *r = redis_fixture_cmd(f, "TIME");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    long long ms = atoll(r->element[0]->str) * 1000 + atoll(r->element[1]->str) / 1000;
    freeReplyObject(r);
    return ms;
}

/* ---- another thread (another owner) tries a half ----------------------------------------- */

typedef struct attempt {
    dlock_lock *l;
    int64_t wait_ms;
    int64_t lease_ms;
    int64_t hold_ms; /* hold this long before releasing (with release) */
    bool release;    /* release after acquiring */
    atomic_int done; /* set last */
    int rc;
    int release_rc;
    int64_t started_us, acquired_us, finished_us;
} attempt;

static inline void *attempt_main(void *arg) {
    attempt *a = arg;
    a->started_us = test_now_us();
    a->rc = dlock_lock_try_acquire(a->l, a->wait_ms, a->lease_ms);
    a->acquired_us = test_now_us();
    if (a->rc == DLOCK_OK && a->release) {
        test_sleep_ms(a->hold_ms);
        a->release_rc = dlock_lock_release(a->l);
    }
    a->finished_us = test_now_us();
    atomic_store(&a->done, 1);
    return NULL;
}

static inline pthread_t attempt_start(attempt *a) {
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, attempt_main, a), 0);
    return t;
}

/* Runs one attempt on a new thread and waits for it: the result as another owner sees it. */
static inline int try_from_other_thread(dlock_lock *l, int64_t wait_ms, bool release) {
    attempt a = {.l = l, .wait_ms = wait_ms, .lease_ms = 30000, .release = release};
    pthread_t t = attempt_start(&a);
    assert_int_equal(pthread_join(t, NULL), 0);
    if (a.rc == DLOCK_OK && release)
        ASSERT_RC(a.release_rc, DLOCK_OK);
    return a.rc;
}

/* Waits until the waiters started since scripts_before sleep: channel has subscribers
 * subscribers, at least min_calls attempts ran, and no attempt came for 100 ms. (A waiter
 * attempts once, or twice when its client was not yet subscribed.) */
static inline void wait_until_asleep(redis_fixture *f, const char *channel, long long subscribers,
                                     long long scripts_before, long long min_calls) {
    int64_t until = test_now_ms() + slack_ms(5000);
    long long seen = -1;
    int64_t seen_at = 0;
    for (;;) {
        long long calls = script_calls(f);
        if (calls != seen) {
            seen = calls;
            seen_at = test_now_ms();
        }
        if (numsub(f, channel) == subscribers && calls >= scripts_before + min_calls &&
            test_now_ms() - seen_at >= 100)
            return;
        if (test_now_ms() >= until)
            fail_msg("waiters not asleep: %lld subscribers (expected %lld), %lld attempts "
                     "(expected %lld or more)",
                     numsub(f, channel), subscribers, calls - scripts_before, min_calls);
        test_sleep_ms(5);
    }
}

/* Starts a on a new thread and returns once it sleeps as a waiter, subscribed on the lock's
 * channel (its client's subscription makes subscribers in all). */
static inline pthread_t start_and_let_it_sleep(redis_fixture *f, const char *channel,
                                               long long subscribers, attempt *a) {
    long long scripts_before = script_calls(f);
    pthread_t t = attempt_start(a);
    wait_until_asleep(f, channel, subscribers, scripts_before, 1);
    assert_int_equal(atomic_load(&a->done), 0);
    return t;
}

static inline void expect_locked(dlock_rwlock *rw, bool read, bool write) {
    bool r = !read, w = !write;
    ASSERT_RC(dlock_lock_is_locked(READ(rw), &r), DLOCK_OK);
    ASSERT_RC(dlock_lock_is_locked(WRITE(rw), &w), DLOCK_OK);
    if (r != read || w != write)
        fail_msg("is_locked: read %d write %d, expected read %d write %d", r, w, read, write);
}

#endif
