/* SPDX-License-Identifier: MIT */
/* wait_helpers.h — the helpers of the wait tests (test_wait.c and the files split from it), written
 * once. Included by those test files only; everything here is static inline. */
#ifndef DLOCK_TEST_WAIT_HELPERS_H
#define DLOCK_TEST_WAIT_HELPERS_H
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "core_call.h"
#include "harness.h"
#include "redis_fixture.h"
#include "test_util.h"

#define BUDGET_S 30

#ifndef DLOCK_FOREVER
#define DLOCK_FOREVER (-1) /* dlock/lock.h's "no deadline", as dlock__wait_start_on takes it */
#endif

/* ---- the test waiter ------------------------------------------------------------------------ */

#define MAX_TRACE 32

typedef struct test_waiter {
    dlock__waiter w;
    dlock__handle handle; /* the primitive's handle it waits for; never freed (static) */
    /* set before the start */
    const char *key;          /* the object is free while this key exists */
    const char *channel;      /* lives as long as the wait: a string literal */
    const char *turn_channel; /* likewise, or NULL: no turns */
    const char *turn_name;    /* the turn that names this waiter (ops->named), or NULL */
    int64_t hint_ms;          /* BUSY hint; -1: none */
    int64_t wait_ms;
    const dlock__wait_ops *ops;
    /* A woken attempt answers BUSY, whatever the key says, and late: after the waiter's
     * deadline if it has one, else race_hold_ms() later. The waiter wanted more than the
     * message freed, and meanwhile it ran out of time or was canceled. */
    bool busy_late_when_woken;
    bool fail_when_woken; /* a woken attempt fails with DLOCK_ECONN */
    int64_t need;         /* units it asks for (ops_supply) */
    int64_t hold_ms;      /* every answer reaches the engine this much later */
    /* recorded on the loop thread, read under mu */
    int attempts;
    int woken_attempts;
    int replies;
    int64_t started_ms;
    int64_t attempt_ms[MAX_TRACE];
    int64_t reply_ms[MAX_TRACE];
    int done_calls;
    int done_status;
    int64_t done_ms;
    bool done_inside_cancel;
    /* an answer held back (hold_ms, busy_late_when_woken) */
    dlock__timer hold;
    int held_status;
    int64_t held_hint;
} test_waiter;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static bool inside_cancel; /* loop thread only */

static inline void deliver(test_waiter *t, int status, int64_t hint) {
    pthread_mutex_lock(&mu);
    if (t->replies < MAX_TRACE)
        t->reply_ms[t->replies] = dlock__now_ms();
    t->replies++;
    pthread_mutex_unlock(&mu);
    dlock__wait_result(&t->w, status, hint);
}

static inline void on_hold_over(dlock__timer *timer, void *arg) {
    (void)timer;
    test_waiter *t = arg;
    deliver(t, t->held_status, t->held_hint);
}

static inline void hold_until(test_waiter *t, int64_t due_ms, int status, int64_t hint) {
    t->held_status = status;
    t->held_hint = hint;
    dlock__timer_start_at(&DLOCK__NET(t->w.client)->sched, &t->hold, due_ms);
}

/* How late a held-back answer reaches the engine: long enough (seconds) that what the test
 * does meanwhile (a release, a cancel) surely comes first on a loaded machine. */
static inline int64_t race_hold_ms(void) {
    return test_slack_ms(1000);
}

static inline void set_hold(dlock_client *c, void *arg) {
    (void)c;
    ((test_waiter *)arg)->hold_ms = race_hold_ms();
}

typedef struct attempt_ctx {
    test_waiter *t;
    bool woken;
} attempt_ctx;

static inline void on_exists(dlock_client *c, int status, const dlock__reply *reply, int sends,
                             void *arg) {
    (void)c;
    (void)sends;
    attempt_ctx *a = arg;
    test_waiter *t = a->t;
    bool woken = a->woken;
    dlock__free(a);
    int result;
    int64_t hint = -1;
    if (status != DLOCK_OK) {
        result = status;
    } else if (dlock__reply_int(reply) == 1) {
        result = DLOCK_OK;
    } else {
        result = DLOCK__BUSY;
        hint = t->hint_ms;
    }
    if (woken && t->fail_when_woken)
        result = DLOCK_ECONN;
    if (woken && t->busy_late_when_woken && status == DLOCK_OK) {
        int64_t due = t->w.deadline_ms != INT64_MAX ? t->w.deadline_ms + 30
                                                    : dlock__now_ms() + race_hold_ms();
        hold_until(t, due, DLOCK__BUSY, t->hint_ms);
        return;
    }
    if (t->hold_ms > 0 && status == DLOCK_OK) {
        hold_until(t, dlock__now_ms() + t->hold_ms, result, hint);
        return;
    }
    deliver(t, result, hint);
}

static inline void waiter_attempt(dlock__waiter *w) {
    test_waiter *t = DLOCK__CONTAINER_OF(w, test_waiter, w);
    pthread_mutex_lock(&mu);
    if (t->attempts < MAX_TRACE)
        t->attempt_ms[t->attempts] = dlock__now_ms();
    t->attempts++;
    t->woken_attempts += w->woken;
    pthread_mutex_unlock(&mu);
    attempt_ctx *a = dlock__malloc(sizeof(*a));
    int rc = DLOCK_ENOMEM;
    if (a) {
        a->t = t;
        a->woken = w->woken;
        const char *argv[2] = {"EXISTS", t->key};
        size_t lens[2] = {6, strlen(t->key)};
        rc = dlock__command(w->client, DLOCK__CMD_RETRY_SAFE, on_exists, a, 2, argv, lens);
        if (rc != DLOCK_OK)
            dlock__free(a);
    }
    if (rc != DLOCK_OK) /* ECLOSED: the client is closing, as a primitive would report it */
        deliver(t, rc == DLOCK_ECLOSED ? DLOCK_ECANCELED : rc, -1);
}

static inline void waiter_done(dlock__waiter *w, int status) {
    test_waiter *t = DLOCK__CONTAINER_OF(w, test_waiter, w);
    pthread_mutex_lock(&mu);
    t->done_calls++;
    t->done_status = status;
    t->done_ms = dlock__now_ms();
    t->done_inside_cancel = inside_cancel;
    pthread_mutex_unlock(&mu);
}

static inline int wake_one(const char *msg, size_t len) {
    (void)msg;
    (void)len;
    return 1;
}

static inline int wake_all(const char *msg, size_t len) {
    (void)msg;
    (void)len;
    return -1;
}

/* A message that is a decimal number announces that many units (permits) free. */
static inline bool units_supplied(const char *msg, size_t len, int64_t *available) {
    if (len == 0 || len > 9)
        return false;
    int64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (msg[i] < '0' || msg[i] > '9')
            return false;
        v = v * 10 + (msg[i] - '0');
    }
    *available = v;
    return true;
}

static inline int64_t units_needed(const dlock__waiter *w) {
    return DLOCK__CONTAINER_OF(w, test_waiter, w)->need;
}

static const dlock__wait_ops ops_wake_one = {
    .attempt = waiter_attempt, .wake_count = wake_one, .done = waiter_done};
static const dlock__wait_ops ops_wake_all = {
    .attempt = waiter_attempt, .wake_count = wake_all, .done = waiter_done};
static const dlock__wait_ops ops_wake_default = {.attempt = waiter_attempt, .done = waiter_done};
static const dlock__wait_ops ops_supply = {.attempt = waiter_attempt,
                                           .wake_count = wake_one,
                                           .done = waiter_done,
                                           .supply = units_supplied,
                                           .need = units_needed};

#define NWAITERS 8
static test_waiter waiters[NWAITERS];

static inline test_waiter *waiter_reset(int i, const char *key, const char *channel,
                                        int64_t wait_ms, int64_t hint_ms,
                                        const dlock__wait_ops *ops) {
    test_waiter *t = &waiters[i];
    memset(t, 0, sizeof(*t));
    t->key = key;
    t->channel = channel;
    t->wait_ms = wait_ms;
    t->hint_ms = hint_ms;
    t->ops = ops;
    dlock__timer_init(&t->hold, on_hold_over, t);
    return t;
}

/* Snapshot of a waiter's record, taken under mu. */
typedef struct seen {
    int attempts, woken_attempts, replies, done_calls, done_status;
    int64_t started_ms, done_ms;
    bool done_inside_cancel;
} seen;

static inline seen look(const test_waiter *t) {
    pthread_mutex_lock(&mu);
    seen s = {t->attempts,    t->woken_attempts, t->replies, t->done_calls,
              t->done_status, t->started_ms,     t->done_ms, t->done_inside_cancel};
    pthread_mutex_unlock(&mu);
    return s;
}

static inline int attempts_of(const test_waiter *t) {
    return look(t).attempts;
}
static inline int done_calls_of(const test_waiter *t) {
    return look(t).done_calls;
}

/* Loop-thread steps. */
typedef struct waiter_set {
    test_waiter **ws;
    size_t n;
} waiter_set;

static inline void start_set(dlock_client *c, void *arg) {
    waiter_set *s = arg;
    for (size_t i = 0; i < s->n; i++) {
        test_waiter *t = s->ws[i];
        pthread_mutex_lock(&mu);
        t->started_ms = dlock__now_ms();
        pthread_mutex_unlock(&mu);
        dlock__handle_init(&t->handle, c, NULL);
        dlock__wait_start_on(&t->w, &t->handle, t->ops, t->channel, t->turn_channel, t->wait_ms);
    }
}

static inline void cancel_set(dlock_client *c, void *arg) {
    (void)c;
    waiter_set *s = arg;
    inside_cancel = true;
    for (size_t i = 0; i < s->n; i++)
        dlock__wait_cancel(&s->ws[i]->w);
    inside_cancel = false;
}

static inline void start_waiters(dlock_client *c, test_waiter **ws, size_t n) {
    waiter_set s = {ws, n};
    on_loop(c, start_set, &s);
}

static inline void cancel_waiters(dlock_client *c, test_waiter **ws, size_t n) {
    waiter_set s = {ws, n};
    on_loop(c, cancel_set, &s);
}

/* Every waiter has had its answers in, made at least `min_attempts` and nothing more has
 * happened for 50 ms: with no hint it is asleep. */
static inline bool settled(test_waiter **ws, size_t n, int min_attempts) {
    int before[NWAITERS];
    for (size_t i = 0; i < n; i++) {
        seen s = look(ws[i]);
        if (s.attempts < min_attempts || s.replies != s.attempts || s.done_calls != 0)
            return false;
        before[i] = s.attempts;
    }
    test_sleep_ms(50);
    for (size_t i = 0; i < n; i++)
        if (attempts_of(ws[i]) != before[i])
            return false;
    return true;
}

static inline void wait_settled(test_waiter **ws, size_t n, int min_attempts) {
    bool ok = false;
    POLL_UNTIL(ok, settled(ws, n, min_attempts), test_slack_ms(2000));
    assert_true(ok);
}

/* ---- reading the server's and the core's view ------------------------------------------------ */

static inline long long subscribe_calls(redis_fixture *f) {
    return redis_fixture_info_int(f, "commandstats", "cmdstat_subscribe.calls");
}

typedef struct core_view {
    size_t queues, channels;
    int subscriber_state;
} core_view;

static inline void read_core_view(dlock_client *c, void *arg) {
    core_view *v = arg;
    v->queues = DLOCK__ENGINE(c)->waits.queues.count;
    v->channels = DLOCK__NET(c)->pubsub.channels.count;
    v->subscriber_state = (int)DLOCK__NET(c)->pubsub.link.state;
}

static inline core_view core_view_of(dlock_client *c) {
    core_view v;
    on_loop(c, read_core_view, &v);
    return v;
}

static inline void set_key(redis_fixture *f, const char *key) {
    redisReply *r = redis_fixture_cmd(f, "SET %s 1", key);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
}

/* The object is freed: the key appears, then the release message. Returns when the
 * PUBLISH was answered; *at: when the key appeared. */
static inline void release(redis_fixture *f, const char *key, const char *channel, int64_t *at) {
    if (at)
        *at = test_now_ms();
    set_key(f, key);
    redisReply *r = redis_fixture_cmd(f, "PUBLISH %s %s", channel, "released");
    assert_non_null(r);
    freeReplyObject(r);
}

/* ---- per-test server and client ------------------------------------------------------------ */

typedef test_world world;

static inline int setup(void **state) {
    return test_world_setup(state);
}

static inline int teardown(void **state) {
    return test_world_teardown(state);
}

#endif
