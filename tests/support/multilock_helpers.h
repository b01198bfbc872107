/* SPDX-License-Identifier: MIT */
/* multilock_helpers.h — the helpers of the multilock tests (test_multilock.c and the files split
 * from it), written once. Included by those test files only; everything here is static inline. */
#ifndef DLOCK_TEST_MULTILOCK_HELPERS_H
#define DLOCK_TEST_MULTILOCK_HELPERS_H
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
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
#include "harness.h"
#include "redis_fixture.h"
#include "test_util.h"

#define BUDGET_S 60
#define NSERVERS 3

/* ---- helpers ----------------------------------------------------------------------------- */

/* Three servers and a client on each. */
typedef struct cluster {
    redis_fixture *f[NSERVERS];
    dlock_client *c[NSERVERS];
} cluster;

static inline void cluster_start(cluster *cl, int64_t watchdog_ms) {
    memset(cl, 0, sizeof(*cl));
    for (int i = 0; i < NSERVERS; i++)
        assert_int_equal(redis_fixture_start(NULL, &cl->f[i]), 0);
    for (int i = 0; i < NSERVERS; i++)
        cl->c[i] = connect_client_cfg(cl->f[i], (test_client_cfg){.watchdog_ms = watchdog_ms});
}

static inline void cluster_stop(cluster *cl) {
    for (int i = 0; i < NSERVERS; i++) {
        if (cl->c[i])
            ASSERT_RC(dlock_client_free(cl->c[i]), DLOCK_OK);
        cl->c[i] = NULL;
    }
    for (int i = 0; i < NSERVERS; i++)
        redis_fixture_stop(cl->f[i]);
}

static inline dlock_lock *new_lock(dlock_client *c, const char *name) {
    dlock_lock *l = NULL;
    ASSERT_RC(dlock_lock_new(c, name, &l), DLOCK_OK);
    return l;
}

static inline dlock_lock *new_fenced(dlock_client *c, const char *name) {
    dlock_lock *l = NULL;
    ASSERT_RC(dlock_fencedlock_new(c, name, &l), DLOCK_OK);
    return l;
}

static inline dlock_lock *new_multilock(dlock_lock *const *members, size_t n) {
    dlock_lock *m = NULL;
    ASSERT_RC(dlock_multilock_new(members, n, &m), DLOCK_OK);
    assert_non_null(m);
    return m;
}

/* The standard member set: "ml:a" on server 0, "ml:b" on 1, "ml:c" on 2. */
static const char *const member_names[NSERVERS] = {"ml:a", "ml:b", "ml:c"};

static inline void new_members(cluster *cl, dlock_lock *members[NSERVERS]) {
    for (int i = 0; i < NSERVERS; i++)
        members[i] = new_lock(cl->c[i], member_names[i]);
}

static inline void free_locks(dlock_lock **locks, size_t n) {
    for (size_t i = 0; i < n; i++)
        dlock_lock_free(locks[i]);
}

static inline long long exists(redis_fixture *f, const char *key) {
    return redis_fixture_int(f, "EXISTS %s", key);
}

/* The hold count the key's hash gives the calling thread of client c (0 if none). */
static inline long long holds_on(redis_fixture *f, dlock_client *c, const char *key) {
    char field[128];
    owner_field(c, dlock_thread_owner(), field, sizeof(field));
    redisReply *r = redis_fixture_cmd(f, "HGET %s %s", key, field);
    assert_non_null(r);
    long long n = r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;
    freeReplyObject(r);
    return n;
}

/* Keys of the standard members still present, over all servers. */
static inline long long members_present(cluster *cl) {
    long long n = 0;
    for (int i = 0; i < NSERVERS; i++)
        n += exists(cl->f[i], member_names[i]);
    return n;
}

/* Run fn(arg) on a new thread (a new owner) and wait for it. */
static inline void on_other_thread(void *(*fn)(void *), void *arg) {
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, fn, arg), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
}

/* The index of the member a MultiLock takes last: its order is by client id, then name
 * (dlock/multilock.h), and the standard members have one client each. */
static inline int member_taken_last(cluster *cl) {
    int last = 0;
    for (int i = 1; i < NSERVERS; i++)
        if (strcmp(dlock_client_id(cl->c[i]), dlock_client_id(cl->c[last])) > 0)
            last = i;
    return last;
}

/* ---- the lost callback's record (static: the loop threads write it) ---------------------- */

typedef struct holder_thread {
    dlock_lock *l;
    int64_t lease_ms;
    int64_t hold_ms;
    atomic_bool holding;
    int acquire_rc, release_rc;
    int64_t released_ms;
} holder_thread;

/* Takes l, says so, keeps it hold_ms, releases it. */
static inline void *hold_then_release(void *arg) {
    holder_thread *h = arg;
    h->acquire_rc = dlock_lock_acquire(h->l, h->lease_ms);
    atomic_store(&h->holding, true);
    if (h->acquire_rc != DLOCK_OK)
        return NULL;
    test_sleep_ms(h->hold_ms);
    h->released_ms = test_now_ms();
    h->release_rc = dlock_lock_release(h->l);
    return NULL;
}

#endif
