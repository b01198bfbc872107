/* test_fairlock.c — the fair lock (RFairLock) of src/fairlock/, blocking and async faces,
 * against a real redis-server.
 *
 * What is proven: hold counts and ownership as the reentrant lock; the Redis layout of
 * docs/fairlock.md read back with plain commands (queue list in arrival order, dlock's
 * deadlines in {N}:fair_waiters scored with the server's TIME + fair_wait_ms, Redisson's
 * chained scores in redisson_lock_timeout:{N}, one channel per waiter, names with a '{');
 * that a release publishes "0" on the first waiter's channel only (no herd); the hand-off
 * to a sleeping waiter; that a waiter sends only its attempts, its subscription and its
 * refreshes; that a waiter that gives up (timeout, wait 0, a handle freed under an async
 * acquire) leaves the queue at once and the one behind is not kept waiting; that a waiter
 * whose deadline passed is dropped (every one of them, not only the first) while a newcomer
 * never overtakes one whose deadline has not; that a SIGKILLed waiting process costs the
 * next waiter at most fair_wait_ms; that live waiters keep their places while the holder
 * holds for 4 x fair_wait_ms; 500 async waiters of two clients served in queue order;
 * force_release, the lost callback, bad input and a key of another type.
 *
 * Every test starts its own server. Records written by the client's loop thread live in
 * static storage, so a failed assert leaves nothing dangling. */
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

static dlock_lock *new_fair(dlock_client *c, const char *name) {
    dlock_lock *l = NULL;
    ASSERT_RC(dlock_fairlock_new(c, name, &l), DLOCK_OK);
    return l;
}

/* The keys of a name without '{' (REDIS_LAYOUT.md: prefixed(...)). */
static void queue_key(const char *name, char *buf, size_t size) {
    snprintf(buf, size, "redisson_lock_queue:{%s}", name);
}

/* dlock's own deadlines of its waiters (server clock); Redisson's chained scores live in
 * redisson_lock_timeout:{N}. */
static void waiters_key(const char *name, char *buf, size_t size) {
    snprintf(buf, size, "{%s}:fair_waiters", name);
}

static void waiter_channel(const char *name, const char *field, char *buf, size_t size) {
    snprintf(buf, size, "redisson_lock__channel:{%s}:%s", name, field);
}

/* The queue of name as "field,field," ("" when empty or absent). */
static void queue_dump(redis_fixture *f, const char *name, char *buf, size_t size) {
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

static long long queue_len(redis_fixture *f, const char *name) {
    char key[256];
    queue_key(name, key, sizeof(key));
    return redis_fixture_int(f, "LLEN %s", key);
}

/* A score of field in the sorted set key, or -1 if it is not there. */
static long long score_of(redis_fixture *f, const char *key, const char *field) {
    redisReply *r = redis_fixture_cmd(f, "ZSCORE %s %s", key, field);
    assert_non_null(r);
    long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;
    freeReplyObject(r);
    return v;
}

/* The dlock waiter's deadline (ms, server clock) in {N}:fair_waiters, or -1 if it is not
 * there. */
static long long deadline_of(redis_fixture *f, const char *name, const char *field) {
    char key[256];
    waiters_key(name, key, sizeof(key));
    return score_of(f, key, field);
}

/* The waiter's score in Redisson's redisson_lock_timeout:{N}, or -1 if it is not there. */
static long long redisson_score_of(redis_fixture *f, const char *name, const char *field) {
    char key[256];
    snprintf(key, sizeof(key), "redisson_lock_timeout:{%s}", name);
    return score_of(f, key, field);
}

/* The server's clock (TIME) in ms: what fair.lua scores deadlines with. */
static long long server_now_ms(redis_fixture *f) {
    redisReply *r = redis_fixture_cmd(f, "TIME");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 2);
    long long ms = atoll(r->element[0]->str) * 1000 + atoll(r->element[1]->str) / 1000;
    freeReplyObject(r);
    return ms;
}

/* How many waiter channels of name have a subscriber. */
static long long channels_of(redis_fixture *f, const char *name) {
    redisReply *r = redis_fixture_cmd(f, "PUBSUB CHANNELS redisson_lock__channel:{%s}:*", name);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    long long n = (long long)r->elements;
    freeReplyObject(r);
    return n;
}

static void hash_dump(redis_fixture *f, const char *key, char *buf, size_t size) {
    redisReply *r = redis_fixture_cmd(f, "HGETALL %s", key);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    buf[0] = '\0';
    if (r->elements == 0)
        snprintf(buf, size, "<none>");
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        size_t used = strlen(buf);
        snprintf(buf + used, size - used, "%s=%s;", r->element[i]->str, r->element[i + 1]->str);
    }
    freeReplyObject(r);
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

static void *waiter_run(void *arg) {
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
static pthread_t start_queued_waiter(redis_fixture *f, const char *name, waiter *w) {
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
static pthread_t start_sleeping_waiter(redis_fixture *f, const char *name, waiter *w) {
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

/* ---- hold counts and ownership ----------------------------------------------------------- */

static void
test_hold_count_goes_0_1_0_2_1_0_through_acquire_release_acquire_acquire_release_release(
    void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = new_fair(c, "counted");
    int64_t seen[6];
    ASSERT_RC(dlock_lock_hold_count(l, &seen[0]), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(l, 10000), DLOCK_OK);
    ASSERT_RC(dlock_lock_hold_count(l, &seen[1]), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    ASSERT_RC(dlock_lock_hold_count(l, &seen[2]), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(l, 10000), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(l, DLOCK_WATCHDOG), DLOCK_OK);
    ASSERT_RC(dlock_lock_hold_count(l, &seen[3]), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    ASSERT_RC(dlock_lock_hold_count(l, &seen[4]), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    ASSERT_RC(dlock_lock_hold_count(l, &seen[5]), DLOCK_OK);
    const int64_t want[6] = {0, 1, 0, 2, 1, 0};
    for (int i = 0; i < 6; i++)
        if (seen[i] != want[i])
            fail_msg("hold count #%d = %lld, expected %lld", i, (long long)seen[i],
                     (long long)want[i]);
    /* uncontended: nobody ever queued */
    assert_int_equal(redis_fixture_int(f, "EXISTS counted"), 0);
    assert_int_equal(redis_fixture_int(f, "EXISTS redisson_lock_queue:{counted}"), 0);
    assert_int_equal(redis_fixture_int(f, "EXISTS redisson_lock_timeout:{counted}"), 0);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

typedef struct other_thread_view {
    dlock_lock *l;
    int release_rc, held_rc, count_rc;
    bool held;
    int64_t count;
} other_thread_view;

static void *release_from_other_thread(void *arg) {
    other_thread_view *v = arg;
    v->release_rc = dlock_lock_release(v->l);
    v->held_rc = dlock_lock_is_held(v->l, &v->held);
    v->count_rc = dlock_lock_hold_count(v->l, &v->count);
    return NULL;
}

static void
test_release_by_another_thread_or_client_is_enotowner_and_the_lock_stays_held(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_client *b = connect_client(f);
    dlock_lock *la = new_fair(a, "not-yours");
    dlock_lock *lb = new_fair(b, "not-yours");
    ASSERT_RC(dlock_lock_acquire(la, 20000), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(la, 20000), DLOCK_OK);
    char before[512], after[512], field[FIELD_MAX], want[512];
    hash_dump(f, "not-yours", before, sizeof(before));
    owner_field(a, dlock_thread_owner(), field, sizeof(field));
    snprintf(want, sizeof(want), "%s=2;", field);
    assert_string_equal(before, want);
    /* another thread of the same client */
    other_thread_view v = {.l = la, .held = true, .count = -1};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, release_from_other_thread, &v), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    ASSERT_RC(v.release_rc, DLOCK_ENOTOWNER);
    ASSERT_RC(v.held_rc, DLOCK_OK);
    ASSERT_RC(v.count_rc, DLOCK_OK);
    assert_false(v.held);
    assert_int_equal(v.count, 0);
    /* the same thread through another client: another owner too */
    ASSERT_RC(dlock_lock_release(lb), DLOCK_ENOTOWNER);
    hash_dump(f, "not-yours", after, sizeof(after));
    assert_string_equal(after, before);
    assert_int_equal(redis_fixture_int(f, "EXISTS redisson_lock_queue:{not-yours}"), 0);
    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(la), DLOCK_ENOTOWNER);
    assert_int_equal(redis_fixture_int(f, "EXISTS not-yours"), 0);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

static void test_holder_reacquires_at_once_while_others_wait_in_line(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_client *b = connect_client(f);
    dlock_lock *la = new_fair(a, "reenter");
    dlock_lock *lb = new_fair(b, "reenter");
    atomic_store(&turns, 0);
    ASSERT_RC(dlock_lock_acquire(la, 30000), DLOCK_OK);
    waiter w = {.c = b, .l = lb, .wait_ms = slack_ms(20000)};
    pthread_t t = start_queued_waiter(f, "reenter", &w);
    /* reentrant: no queueing behind the waiter */
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_try_acquire(la, 0, 30000), DLOCK_OK);
    ASSERT_BETWEEN(test_now_ms() - start, 0, slack_ms(100));
    int64_t count = 0;
    ASSERT_RC(dlock_lock_hold_count(la, &count), DLOCK_OK);
    assert_int_equal(count, 2);
    char q[1024], want[1024];
    queue_dump(f, "reenter", q, sizeof(q));
    snprintf(want, sizeof(want), "%s,", w.field);
    assert_string_equal(q, want);
    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    test_sleep_ms(50);
    assert_int_equal(atomic_load(&turns), 0); /* one hold left: still waiting */
    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    assert_int_equal(pthread_join(t, NULL), 0);
    ASSERT_RC(w.rc, DLOCK_OK);
    ASSERT_RC(w.release_rc, DLOCK_OK);
    assert_int_equal(w.turn, 1);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

/* ---- the layout in Redis ----------------------------------------------------------------- */

static void
test_layout_queue_in_arrival_order_timeouts_at_server_time_plus_fair_wait_one_channel_each(
    void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    const int64_t fair_wait = 5000;
    dlock_client *a = connect_client_cfg(f, (test_client_cfg){.fair_wait_ms = fair_wait});
    dlock_client *b = connect_client_cfg(f, (test_client_cfg){.fair_wait_ms = fair_wait});
    dlock_client *c = connect_client_cfg(f, (test_client_cfg){.fair_wait_ms = fair_wait});
    dlock_lock *la = new_fair(a, "layout");
    dlock_lock *lb = new_fair(b, "layout");
    dlock_lock *lc = new_fair(c, "layout");
    atomic_store(&turns, 0);
    ASSERT_RC(dlock_lock_acquire(la, 30000), DLOCK_OK);
    char holder[FIELD_MAX], dump[512], want[1024];
    owner_field(a, dlock_thread_owner(), holder, sizeof(holder));
    snprintf(want, sizeof(want), "%s=1;", holder);
    hash_dump(f, "layout", dump, sizeof(dump));
    assert_string_equal(dump, want); /* the lock itself: as the reentrant lock */
    waiter wb = {.c = b, .l = lb, .wait_ms = slack_ms(30000)};
    waiter wc = {.c = c, .l = lc, .wait_ms = slack_ms(30000)};
    pthread_t tb = start_sleeping_waiter(f, "layout", &wb);
    pthread_t tc = start_sleeping_waiter(f, "layout", &wc);

    char *type = redis_fixture_str(f, "TYPE redisson_lock_queue:{layout}");
    assert_string_equal(type, "list");
    free(type);
    type = redis_fixture_str(f, "TYPE redisson_lock_timeout:{layout}");
    assert_string_equal(type, "zset");
    free(type);
    type = redis_fixture_str(f, "TYPE {layout}:fair_waiters");
    assert_string_equal(type, "zset");
    free(type);
    char q[1024];
    queue_dump(f, "layout", q, sizeof(q));
    snprintf(want, sizeof(want), "%s,%s,", wb.field, wc.field);
    assert_string_equal(q, want); /* first in line first */
    assert_int_equal(redis_fixture_int(f, "ZCARD redisson_lock_timeout:{layout}"), 2);
    assert_int_equal(redis_fixture_int(f, "ZCARD {layout}:fair_waiters"), 2);
    /* dlock's deadlines: the server's clock + fair_wait, refreshed at least every
     * fair_wait / 3 */
    long long now = server_now_ms(f);
    long long db = deadline_of(f, "layout", wb.field), dc = deadline_of(f, "layout", wc.field);
    ASSERT_BETWEEN(db - now, fair_wait - fair_wait / 3 - slack_ms(300), fair_wait + 50);
    ASSERT_BETWEEN(dc - now, fair_wait - fair_wait / 3 - slack_ms(300), fair_wait + 50);
    assert_int_equal(deadline_of(f, "layout", holder), -1); /* the holder is not in line */
    /* Redisson's chained scores: the first REDISSON_WAIT after the lease's end, each next
     * REDISSON_WAIT after the one before (a refresh may raise one by the ms the clock
     * moved) */
    const long long redisson_wait = 300000;
    long long lease_end = now + redis_fixture_int(f, "PTTL layout");
    long long rb = redisson_score_of(f, "layout", wb.field);
    long long rc = redisson_score_of(f, "layout", wc.field);
    ASSERT_BETWEEN(rb - lease_end, redisson_wait - 50, redisson_wait + 50);
    ASSERT_BETWEEN(rc - rb, redisson_wait - 50, redisson_wait + 50);
    assert_int_equal(redisson_score_of(f, "layout", holder), -1);
    /* one channel per waiter; nobody listens on the lock's own channel */
    char chb[512], chc[512];
    waiter_channel("layout", wb.field, chb, sizeof(chb));
    waiter_channel("layout", wc.field, chc, sizeof(chc));
    assert_int_equal(numsub(f, chb), 1);
    assert_int_equal(numsub(f, chc), 1);
    assert_int_equal(numsub(f, "redisson_lock__channel:{layout}"), 0);
    redisReply *r = redis_fixture_cmd(f, "PUBSUB CHANNELS redisson_lock__channel:*");
    assert_true(r && r->type == REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 2);
    freeReplyObject(r);

    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    assert_int_equal(pthread_join(tb, NULL), 0);
    assert_int_equal(pthread_join(tc, NULL), 0);
    ASSERT_RC(wb.rc, DLOCK_OK);
    ASSERT_RC(wc.rc, DLOCK_OK);
    assert_int_equal(wb.turn, 1);
    assert_int_equal(wc.turn, 2);
    /* everybody served: nothing left behind */
    assert_int_equal(redis_fixture_int(f, "EXISTS layout"), 0);
    assert_int_equal(redis_fixture_int(f, "EXISTS redisson_lock_queue:{layout}"), 0);
    assert_int_equal(redis_fixture_int(f, "EXISTS redisson_lock_timeout:{layout}"), 0);
    assert_int_equal(redis_fixture_int(f, "EXISTS {layout}:fair_waiters"), 0);
    printf("# deadlines %lld and %lld ms ahead of the server's clock (fair_wait_ms %lld)\n",
           db - now, dc - now, (long long)fair_wait);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_lock_free(lc);
    dlock_client_free(a);
    dlock_client_free(b);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void
test_name_with_a_brace_uses_queue_timeout_and_channel_without_extra_braces(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_client *b = connect_client(f);
    const char *name = "acct{7}:fair";
    dlock_lock *la = new_fair(a, name);
    dlock_lock *lb = new_fair(b, name);
    atomic_store(&turns, 0);
    ASSERT_RC(dlock_lock_acquire(la, 30000), DLOCK_OK);
    waiter w = {.c = b, .l = lb, .wait_ms = slack_ms(20000)};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, waiter_run, &w), 0);
    bool ok = false;
    POLL_UNTIL(ok, redis_fixture_int(f, "LLEN redisson_lock_queue:acct{7}:fair") == 1,
               slack_ms(3000));
    assert_true(ok);
    char channel[512];
    snprintf(channel, sizeof(channel), "redisson_lock__channel:acct{7}:fair:%s", w.field);
    POLL_UNTIL(ok, numsub(f, channel) == 1, slack_ms(3000));
    assert_true(ok);
    assert_int_equal(redis_fixture_int(f, "ZCARD redisson_lock_timeout:acct{7}:fair"), 1);
    assert_int_equal(redis_fixture_int(f, "ZCARD acct{7}:fair:fair_waiters"), 1);
    assert_int_equal(redis_fixture_int(f, "EXISTS redisson_lock_queue:{acct{7}:fair}"), 0);
    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    assert_int_equal(pthread_join(t, NULL), 0);
    ASSERT_RC(w.rc, DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "EXISTS redisson_lock_queue:acct{7}:fair"), 0);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

/* ---- wake-ups ---------------------------------------------------------------------------- */

static atomic_bool let_go; /* holders of test_release_... wait for it before releasing */

static void *hold_until_let_go(void *arg) {
    waiter *w = arg;
    owner_field(w->c, dlock_thread_owner(), w->field, sizeof(w->field));
    atomic_store(&w->field_ready, true);
    w->rc = dlock_lock_try_acquire(w->l, w->wait_ms, 30000);
    if (w->rc == DLOCK_OK) {
        w->turn = atomic_fetch_add(&turns, 1) + 1;
        while (!atomic_load(&let_go))
            test_sleep_ms(2);
        w->release_rc = dlock_lock_release(w->l);
    }
    return NULL;
}

static void test_release_publishes_0_to_the_first_waiter_only_and_no_herd_follows(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    enum { WAITERS = 4 };
    dlock_client *a = connect_client(f);
    dlock_client *c[WAITERS];
    dlock_lock *la = new_fair(a, "herd"), *l[WAITERS];
    atomic_store(&turns, 0);
    atomic_store(&let_go, false);
    ASSERT_RC(dlock_lock_acquire(la, 30000), DLOCK_OK);
    waiter w[WAITERS];
    pthread_t t[WAITERS];
    for (int i = 0; i < WAITERS; i++) {
        c[i] = connect_client(f);
        l[i] = new_fair(c[i], "herd");
        w[i] = (waiter){.c = c[i], .l = l[i], .wait_ms = slack_ms(30000)};
        long long scripts_before = script_calls(f);
        assert_int_equal(pthread_create(&t[i], NULL, hold_until_let_go, &w[i]), 0);
        bool ok = false;
        POLL_UNTIL(ok, queue_len(f, "herd") == i + 1 && script_calls(f) >= scripts_before + 2,
                   slack_ms(3000));
        assert_true(ok);
        char channel[512];
        waiter_channel("herd", w[i].field, channel, sizeof(channel));
        POLL_UNTIL(ok, numsub(f, channel) == 1, slack_ms(3000));
        assert_true(ok);
    }
    /* a listener of every waiter channel of the lock */
    redisContext *sub = psubscribe_to(f, "redisson_lock__channel:{herd}*");

    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    bool ok = false;
    POLL_UNTIL(ok, atomic_load(&turns) == 1, slack_ms(3000));
    assert_true(ok);
    /* every script that publishes for this hand-off has returned: the release, and the first
     * waiter's acquire; the others' attempts find the lock held and publish nothing */
    freeReplyObject(redis_fixture_cmd(f, "PUBLISH redisson_lock__channel:{herd}:end end"));
    int got[WAITERS] = {0}, strangers = 0, first_msg = -1, seen = 0;
    char channel[WAITERS][512];
    for (int i = 0; i < WAITERS; i++)
        waiter_channel("herd", w[i].field, channel[i], sizeof(channel[i]));
    for (;;) {
        void *m = NULL;
        assert_int_equal(redisGetReply(sub, &m), REDIS_OK);
        redisReply *r = m;
        assert_true(r->type == REDIS_REPLY_ARRAY && r->elements == 4);
        const char *ch = r->element[2]->str, *msg = r->element[3]->str;
        bool end = strcmp(msg, "end") == 0;
        if (!end) {
            int who = -1;
            for (int i = 0; i < WAITERS; i++)
                if (strcmp(ch, channel[i]) == 0)
                    who = i;
            assert_string_equal(msg, "0");
            if (who < 0)
                strangers++;
            else
                got[who]++;
            if (seen++ == 0)
                first_msg = who;
        }
        freeReplyObject(r);
        if (end)
            break;
    }
    redisFree(sub);
    /* the release's message goes to the first in line, and only there; a refresh of the
     * first while it was free may repeat it, and the new holder may tell the next in line
     * about its lease: nobody further back hears anything */
    assert_int_equal(first_msg, 0);
    ASSERT_BETWEEN(got[0], 1, 2);
    ASSERT_BETWEEN(got[1], 0, 1);
    assert_int_equal(got[2], 0);
    assert_int_equal(got[3], 0);
    assert_int_equal(strangers, 0);
    atomic_store(&let_go, true);
    for (int i = 0; i < WAITERS; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        ASSERT_RC(w[i].rc, DLOCK_OK);
        ASSERT_RC(w[i].release_rc, DLOCK_OK);
        assert_int_equal(w[i].turn, i + 1);
    }
    printf("# release: messages to the waiters in line: %d %d %d %d\n", got[0], got[1], got[2],
           got[3]);
    dlock_lock_free(la);
    dlock_client_free(a);
    for (int i = 0; i < WAITERS; i++) {
        dlock_lock_free(l[i]);
        dlock_client_free(c[i]);
    }
    redis_fixture_stop(f);
}

static void test_waiter_of_another_client_gets_the_lock_within_100_ms_of_the_release(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_client *b = connect_client(f);
    dlock_lock *la = new_fair(a, "handoff");
    dlock_lock *lb = new_fair(b, "handoff");
    const int rounds = 5;
    int64_t worst_us = INT64_MIN, total_us = 0;
    for (int i = 0; i < rounds; i++) {
        atomic_store(&turns, 0);
        ASSERT_RC(dlock_lock_acquire(la, 30000), DLOCK_OK);
        waiter w = {.c = b, .l = lb, .wait_ms = slack_ms(10000)};
        pthread_t t = start_sleeping_waiter(f, "handoff", &w);
        ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
        int64_t released_us = test_now_us();
        assert_int_equal(pthread_join(t, NULL), 0);
        ASSERT_RC(w.rc, DLOCK_OK);
        int64_t latency_us = w.acquired_us - released_us;
        if (latency_us > worst_us)
            worst_us = latency_us;
        total_us += latency_us;
        ASSERT_BETWEEN(latency_us / 1000, -slack_ms(100), slack_ms(100));
    }
    printf("# hand-off release -> waiter's acquire: mean %.2f ms, worst %.2f ms (%d rounds)\n",
           (double)total_us / rounds / 1000.0, (double)worst_us / 1000.0, rounds);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

static void test_force_release_wakes_the_first_waiter_and_says_whether_it_was_held(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_client *b = connect_client(f);
    dlock_client *c = connect_client(f);
    dlock_lock *la = new_fair(a, "force-wake");
    dlock_lock *lb = new_fair(b, "force-wake");
    dlock_lock *lc = new_fair(c, "force-wake");
    atomic_store(&turns, 0);
    bool was_locked = true;
    ASSERT_RC(dlock_lock_force_release(lc, &was_locked), DLOCK_OK);
    assert_false(was_locked);
    /* a 60 s lease: only the force release's message can let the waiter in soon */
    ASSERT_RC(dlock_lock_acquire(la, 60000), DLOCK_OK);
    waiter w = {.c = b, .l = lb, .wait_ms = 30000};
    pthread_t t = start_sleeping_waiter(f, "force-wake", &w);
    ASSERT_RC(dlock_lock_force_release(lc, &was_locked), DLOCK_OK);
    int64_t forced_us = test_now_us();
    assert_true(was_locked);
    assert_int_equal(pthread_join(t, NULL), 0);
    ASSERT_RC(w.rc, DLOCK_OK);
    int64_t latency_ms = (w.acquired_us - forced_us) / 1000;
    ASSERT_BETWEEN(latency_ms, -slack_ms(100), slack_ms(100));
    ASSERT_RC(dlock_lock_release(la), DLOCK_ELOST);          /* its hold was taken away */
    ASSERT_RC(dlock_lock_force_release(lc, NULL), DLOCK_OK); /* was_locked may be NULL */
    printf("# force release -> first waiter in: %lld ms\n", (long long)latency_ms);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_lock_free(lc);
    dlock_client_free(a);
    dlock_client_free(b);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- no polling -------------------------------------------------------------------------- */

static void test_waiter_sends_at_most_6_commands_during_a_1500_ms_wait(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture_opts fo = {.tcp = true};
    redis_fixture *f = NULL;
    assert_int_equal(redis_fixture_start(&fo, &f), 0);
    const int64_t fair_wait = 5000;
    dlock_client *a = connect_client_cfg(f, (test_client_cfg){.fair_wait_ms = fair_wait});
    /* the waiter is the only client on TCP */
    dlock_client *b = connect_client_cfg(
        f, (test_client_cfg){.url = redis_fixture_tcp_url(f), .fair_wait_ms = fair_wait});
    dlock_lock *la = new_fair(a, "quiet");
    dlock_lock *lb = new_fair(b, "quiet");
    char field[FIELD_MAX], channel[512];
    owner_field(b, dlock_thread_owner(), field, sizeof(field));
    waiter_channel("quiet", field, channel, sizeof(channel));
    /* an explicit lease: no renewal in the window; its 60 s PTTL is no hint either */
    ASSERT_RC(dlock_lock_acquire(la, 60000), DLOCK_OK);
    /* a first short wait opens b's subscriber connection, so its handshake is not counted */
    ASSERT_RC(dlock_lock_try_acquire(lb, 100, 1000), DLOCK_ETIMEDOUT);
    bool gone = false;
    POLL_UNTIL(gone, numsub(f, channel) == 0 && queue_len(f, "quiet") == 0, slack_ms(1000));
    assert_true(gone);

    redisContext *mon = monitor_open(f);
    long long total_before = redis_fixture_info_int(f, "stats", "total_commands_processed");
    long long scripts_before = script_calls(f);
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_try_acquire(lb, 1500, 1000), DLOCK_ETIMEDOUT);
    int64_t took = test_now_ms() - start;
    ASSERT_BETWEEN(took, 1500, slack_ms(2500));
    /* the UNSUBSCRIBE and the leave landed */
    POLL_UNTIL(gone, numsub(f, channel) == 0 && queue_len(f, "quiet") == 0, slack_ms(1000));
    assert_true(gone);
    long long scripts = script_calls(f) - scripts_before;
    long long total = redis_fixture_info_int(f, "stats", "total_commands_processed") - total_before;
    freeReplyObject(redis_fixture_cmd(f, "ECHO %s", "end-of-window"));
    char names[512];
    int sent = monitor_count_tcp(mon, "end-of-window", names, sizeof(names));
    redisFree(mon);
    /* expected: 3 attempts (at once, once subscribed, at the deadline: the first refresh
     * is due only after fair_wait / 3 = 1667 ms), the leave, SUBSCRIBE, UNSUBSCRIBE.
     * (total_commands_processed also counts what the scripts run inside.) */
    printf("# 1500 ms wait: %d commands from the waiter [%s]; %lld script calls; "
           "total_commands_processed +%lld (fixture's own and in-script commands included)\n",
           sent, names, scripts, total);
    ASSERT_BETWEEN(scripts, 3, 4);
    ASSERT_BETWEEN(sent, scripts, 6);
    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

/* ---- giving up --------------------------------------------------------------------------- */

static void
test_try_acquire_wait_0_on_a_held_lock_times_out_at_once_and_leaves_no_trace(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_client *b = connect_client(f);
    dlock_lock *la = new_fair(a, "busy");
    dlock_lock *lb = new_fair(b, "busy");
    ASSERT_RC(dlock_lock_acquire(la, 30000), DLOCK_OK);
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_try_acquire(lb, 0, 30000), DLOCK_ETIMEDOUT);
    int64_t took = test_now_ms() - start;
    assert_true(strlen(dlock_last_error()) > 0);
    ASSERT_BETWEEN(took, 0, slack_ms(100));
    bool gone = false;
    POLL_UNTIL(gone,
               redis_fixture_int(f, "EXISTS redisson_lock_queue:{busy}") == 0 &&
                   redis_fixture_int(f, "EXISTS redisson_lock_timeout:{busy}") == 0 &&
                   redis_fixture_int(f, "EXISTS {busy}:fair_waiters") == 0,
               slack_ms(500));
    assert_true(gone);
    redisReply *r = redis_fixture_cmd(f, "PUBSUB CHANNELS redisson_lock__channel:*");
    assert_true(r && r->type == REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 0); /* it never subscribed */
    freeReplyObject(r);
    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(lb, 0, 30000), DLOCK_OK); /* free now: one attempt */
    ASSERT_RC(dlock_lock_release(lb), DLOCK_OK);
    printf("# try_acquire(wait 0) on a held lock: %lld ms\n", (long long)took);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

static void
test_waiter_that_times_out_leaves_the_queue_at_once_and_the_next_is_not_delayed(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    const int64_t fair_wait = 5000; /* what a stale entry would cost the next waiter */
    dlock_client *a = connect_client_cfg(f, (test_client_cfg){.fair_wait_ms = fair_wait});
    dlock_client *b = connect_client_cfg(f, (test_client_cfg){.fair_wait_ms = fair_wait});
    dlock_client *c = connect_client_cfg(f, (test_client_cfg){.fair_wait_ms = fair_wait});
    dlock_lock *la = new_fair(a, "gives-up");
    dlock_lock *lb = new_fair(b, "gives-up");
    dlock_lock *lc = new_fair(c, "gives-up");
    atomic_store(&turns, 0);
    ASSERT_RC(dlock_lock_acquire(la, 60000), DLOCK_OK);
    waiter quitter = {.c = b, .l = lb, .wait_ms = 600};
    waiter patient = {.c = c, .l = lc, .wait_ms = slack_ms(30000)};
    pthread_t tq = start_queued_waiter(f, "gives-up", &quitter);
    pthread_t tp = start_sleeping_waiter(f, "gives-up", &patient);
    char q[1024], want[1024];
    snprintf(want, sizeof(want), "%s,%s,", quitter.field, patient.field);
    queue_dump(f, "gives-up", q, sizeof(q));
    assert_string_equal(q, want);
    assert_int_equal(pthread_join(tq, NULL), 0);
    ASSERT_RC(quitter.rc, DLOCK_ETIMEDOUT);
    /* out of line at once, deadline and all */
    snprintf(want, sizeof(want), "%s,", patient.field);
    bool left = false;
    POLL_UNTIL(left, (queue_dump(f, "gives-up", q, sizeof(q)), strcmp(q, want) == 0),
               slack_ms(200));
    int64_t left_after = test_now_ms() - quitter.returned_ms;
    if (!left)
        fail_msg("queue [%s], expected [%s]", q, want);
    assert_int_equal(deadline_of(f, "gives-up", quitter.field), -1);
    /* the one behind is first now: the release wakes it, with no wait for a deadline */
    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    int64_t released_us = test_now_us();
    assert_int_equal(pthread_join(tp, NULL), 0);
    ASSERT_RC(patient.rc, DLOCK_OK);
    int64_t latency_ms = (patient.acquired_us - released_us) / 1000;
    ASSERT_BETWEEN(latency_ms, -slack_ms(100), slack_ms(100));
    printf("# timed-out waiter out of the queue within %lld ms; next waiter in %lld ms after "
           "the release\n",
           (long long)left_after, (long long)latency_ms);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_lock_free(lc);
    dlock_client_free(a);
    dlock_client_free(b);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- waiters that stopped refreshing ----------------------------------------------------- */

static void test_newcomer_does_not_overtake_a_waiter_until_its_deadline_passes(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = new_fair(c, "ghost");
    /* a waiter of another library (a Redisson client's: no entry in {ghost}:fair_waiters),
     * judged by Redisson's rule: first in line with 1500 ms left, while the lock is free */
    const long long ghost_ms = 1500;
    long long now = server_now_ms(f);
    freeReplyObject(redis_fixture_cmd(f, "RPUSH redisson_lock_queue:{ghost} ghost-client:1"));
    freeReplyObject(redis_fixture_cmd(f, "ZADD redisson_lock_timeout:{ghost} %lld ghost-client:1",
                                      now + ghost_ms));
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_try_acquire(l, 0, 30000), DLOCK_ETIMEDOUT); /* no overtaking */
    char q[512];
    bool ok = false;
    POLL_UNTIL(ok, (queue_dump(f, "ghost", q, sizeof(q)), strcmp(q, "ghost-client:1,") == 0),
               slack_ms(500));
    if (!ok)
        fail_msg("queue [%s], expected only the ghost", q);
    /* a patient acquire gets it when the ghost's deadline passes: its hint is that
     * deadline, no message is needed */
    ASSERT_RC(dlock_lock_try_acquire(l, slack_ms(10000), 30000), DLOCK_OK);
    int64_t took = test_now_ms() - start;
    ASSERT_BETWEEN(took, ghost_ms - 100, ghost_ms + slack_ms(500));
    assert_int_equal(redis_fixture_int(f, "EXISTS redisson_lock_queue:{ghost}"), 0);
    assert_int_equal(redis_fixture_int(f, "EXISTS redisson_lock_timeout:{ghost}"), 0);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    printf("# ghost waiter with %lld ms left: acquired after %lld ms\n", ghost_ms, (long long)took);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_every_waiter_whose_deadline_passed_is_dropped_not_only_the_first(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_client *b = connect_client(f);
    dlock_lock *la = new_fair(a, "expired");
    dlock_lock *lb = new_fair(b, "expired");
    ASSERT_RC(dlock_lock_acquire(la, 30000), DLOCK_OK);
    /* three dlock waiters as fair.lua writes them: Redisson's chained scores, each 5 minutes
     * after the one before, and dlock's own deadlines, by which x keeps its place for a
     * minute while y (second) and z (last) are past theirs */
    long long now = server_now_ms(f);
    freeReplyObject(redis_fixture_cmd(f, "RPUSH redisson_lock_queue:{expired} x:1 y:1 z:1"));
    freeReplyObject(redis_fixture_cmd(f,
                                      "ZADD redisson_lock_timeout:{expired} %lld x:1 %lld y:1 "
                                      "%lld z:1",
                                      now + 330000, now + 630000, now + 930000));
    freeReplyObject(redis_fixture_cmd(f, "ZADD {expired}:fair_waiters %lld x:1 %lld y:1 %lld z:1",
                                      now + 60000, now - 1, now - 5000));
    /* any script call drops them: here a newcomer's single attempt */
    ASSERT_RC(dlock_lock_try_acquire(lb, 0, 30000), DLOCK_ETIMEDOUT);
    char q[512];
    bool ok = false;
    POLL_UNTIL(ok, (queue_dump(f, "expired", q, sizeof(q)), strcmp(q, "x:1,") == 0), slack_ms(500));
    if (!ok)
        fail_msg("queue [%s], expected [x:1,]", q);
    redisReply *r = redis_fixture_cmd(f, "ZRANGE redisson_lock_timeout:{expired} 0 -1");
    assert_true(r && r->type == REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 1);
    assert_string_equal(r->element[0]->str, "x:1");
    freeReplyObject(r);
    r = redis_fixture_cmd(f, "ZRANGE {expired}:fair_waiters 0 -1");
    assert_true(r && r->type == REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 1);
    assert_string_equal(r->element[0]->str, "x:1");
    freeReplyObject(r);
    /* the holder's release drops nobody alive */
    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    queue_dump(f, "expired", q, sizeof(q));
    assert_string_equal(q, "x:1,");
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

/* The child: its own client (made after the fork, with fair_wait_ms), 'C' on the pipe, then
 * on 'G' from the parent an acquire that waits until it is killed. */
static _Noreturn void waiting_child(const char *url, const char *name, int64_t fair_wait_ms,
                                    int wfd, int rfd) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dlock_options o;
    dlock_options_init(&o);
    o.url = url;
    o.fair_wait_ms = fair_wait_ms;
    dlock_client *c = NULL;
    dlock_lock *l = NULL;
    if (dlock_client_new(&o, &c) != DLOCK_OK || dlock_fairlock_new(c, name, &l) != DLOCK_OK) {
        (void)!write(wfd, "E", 1);
        test_child_exit(1);
    }
    (void)!write(wfd, "C", 1);
    char go = 0;
    if (read(rfd, &go, 1) != 1 || go != 'G')
        test_child_exit(1);
    dlock_lock_acquire(l, 30000); /* killed while it waits */
    (void)!write(wfd, "A", 1);    /* it must not get here */
    for (;;)
        pause();
}

static pid_t child_pid; /* the child while it runs, for the teardown */

static int kill_child(void **state) {
    (void)state;
    if (child_pid > 0) {
        kill(child_pid, SIGKILL);
        waitpid(child_pid, NULL, 0);
        child_pid = 0;
    }
    return 0;
}

static void
test_sigkilled_waiting_process_delays_the_next_waiter_by_at_most_fair_wait_ms(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    const int64_t fair_wait = 2000;
    int up[2], down[2];
    assert_int_equal(pipe(up), 0);
    assert_int_equal(pipe(down), 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = test_fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(up[0]);
        close(down[1]);
        waiting_child(redis_fixture_unix_url(f), "dead-waiter", fair_wait, up[1], down[0]);
    }
    child_pid = pid;
    close(up[1]);
    close(down[0]);
    struct pollfd pfd = {.fd = up[0], .events = POLLIN};
    assert_int_equal(poll(&pfd, 1, (int)slack_ms(10000)), 1);
    char got = 0;
    assert_int_equal(read(up[0], &got, 1), 1);
    if (got != 'C')
        fail_msg("the child could not make its client");

    dlock_client *a = connect_client_cfg(f, (test_client_cfg){.fair_wait_ms = fair_wait});
    dlock_client *b = connect_client_cfg(f, (test_client_cfg){.fair_wait_ms = fair_wait});
    dlock_lock *la = new_fair(a, "dead-waiter");
    dlock_lock *lb = new_fair(b, "dead-waiter");
    atomic_store(&turns, 0);
    ASSERT_RC(dlock_lock_acquire(la, 60000), DLOCK_OK);
    assert_int_equal(write(down[1], "G", 1), 1);
    bool ok = false;
    POLL_UNTIL(ok, queue_len(f, "dead-waiter") == 1, slack_ms(5000));
    assert_true(ok); /* the child waits, first in line */
    waiter w = {.c = b, .l = lb, .wait_ms = slack_ms(30000)};
    pthread_t t = start_sleeping_waiter(f, "dead-waiter", &w);
    redisReply *r = redis_fixture_cmd(f, "LINDEX redisson_lock_queue:{dead-waiter} 0");
    assert_true(r && r->type == REDIS_REPLY_STRING);
    char child_field[FIELD_MAX];
    snprintf(child_field, sizeof(child_field), "%s", r->str);
    freeReplyObject(r);
    assert_string_not_equal(child_field, w.field);
    /* let the child refresh a few times: alive, it keeps its place */
    test_sleep_ms(fair_wait);
    char q[1024], want[1024];
    snprintf(want, sizeof(want), "%s,%s,", child_field, w.field);
    queue_dump(f, "dead-waiter", q, sizeof(q));
    assert_string_equal(q, want);

    assert_int_equal(kill(pid, SIGKILL), 0);
    int64_t killed_at = test_now_ms();
    long long left_ms = deadline_of(f, "dead-waiter", child_field) - server_now_ms(f);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    child_pid = 0;
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    ASSERT_BETWEEN(left_ms, 0, fair_wait);
    /* the release wakes the dead child, not us: we get in when its deadline passes */
    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    assert_int_equal(pthread_join(t, NULL), 0);
    ASSERT_RC(w.rc, DLOCK_OK);
    int64_t took = w.returned_ms - killed_at;
    ASSERT_BETWEEN(took, left_ms - 100, left_ms + slack_ms(600));
    ASSERT_BETWEEN(took, 0, fair_wait + slack_ms(1500));
    assert_int_equal(redis_fixture_int(f, "EXISTS redisson_lock_queue:{dead-waiter}"), 0);
    assert_int_equal(redis_fixture_int(f, "EXISTS redisson_lock_timeout:{dead-waiter}"), 0);
    assert_int_equal(redis_fixture_int(f, "EXISTS {dead-waiter}:fair_waiters"), 0);
    printf("# waiter killed %lld ms before its deadline; the next one got the lock %lld ms "
           "after the kill (fair_wait_ms %lld)\n",
           left_ms, (long long)took, (long long)fair_wait);
    close(up[0]);
    close(down[1]);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

static void
test_live_waiters_keep_their_places_while_the_holder_holds_4_times_fair_wait_ms(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    const int64_t fair_wait = 1000, watchdog = 1500;
    dlock_client *a = connect_client_cfg(
        f, (test_client_cfg){.fair_wait_ms = fair_wait, .watchdog_ms = watchdog});
    dlock_client *b = connect_client_cfg(f, (test_client_cfg){.fair_wait_ms = fair_wait});
    dlock_client *c = connect_client_cfg(f, (test_client_cfg){.fair_wait_ms = fair_wait});
    dlock_client *d = connect_client_cfg(f, (test_client_cfg){.fair_wait_ms = fair_wait});
    dlock_lock *la = new_fair(a, "long-hold");
    dlock_lock *lb = new_fair(b, "long-hold");
    dlock_lock *lc = new_fair(c, "long-hold");
    dlock_lock *ld = new_fair(d, "long-hold");
    atomic_store(&turns, 0);
    /* the watchdog keeps it: the waiters' hint is never the end of a lease */
    ASSERT_RC(dlock_lock_acquire(la, DLOCK_WATCHDOG), DLOCK_OK);
    waiter first = {.c = b, .l = lb, .wait_ms = DLOCK_FOREVER};
    waiter second = {.c = c, .l = lc, .wait_ms = DLOCK_FOREVER};
    pthread_t t1 = start_sleeping_waiter(f, "long-hold", &first);
    pthread_t t2 = start_sleeping_waiter(f, "long-hold", &second);
    char want[1024], q[1024];
    snprintf(want, sizeof(want), "%s,%s,", first.field, second.field);
    long long scripts_before = script_calls(f);
    long long last_deadline = deadline_of(f, "long-hold", first.field);
    int refreshes = 0, checks = 0;
    long long least_left = fair_wait;
    int64_t start = test_now_ms();
    while (test_now_ms() - start < 4 * fair_wait) {
        queue_dump(f, "long-hold", q, sizeof(q));
        if (strcmp(q, want) != 0)
            fail_msg("after %lld ms the queue is [%s], expected [%s]",
                     (long long)(test_now_ms() - start), q, want);
        long long now = server_now_ms(f);
        long long d1 = deadline_of(f, "long-hold", first.field);
        long long d2 = deadline_of(f, "long-hold", second.field);
        if (d1 - now < least_left)
            least_left = d1 - now;
        if (d2 - now < least_left)
            least_left = d2 - now;
        if (d1 != last_deadline)
            refreshes++;
        last_deadline = d1;
        assert_true(d1 > now && d2 > now);
        ASSERT_BETWEEN(redis_fixture_int(f, "PTTL long-hold"), 1, watchdog);
        checks++;
        test_sleep_ms(50);
    }
    long long scripts = script_calls(f) - scripts_before;
    int64_t held_ms = test_now_ms() - start;
    /* refreshed every third of fair_wait: about 12 times in 4 x fair_wait, no more */
    ASSERT_BETWEEN(refreshes, 8, 14);
    /* both waiters' refreshes, and the holder's watchdog renewals (a script too, every
     * watchdog / 3 = 500 ms) */
    ASSERT_BETWEEN(scripts, 2 * 8 + 6, 2 * 14 + 10);
    /* a newcomer queues behind them */
    waiter third = {.c = d, .l = ld, .wait_ms = DLOCK_FOREVER};
    pthread_t t3 = start_queued_waiter(f, "long-hold", &third);
    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    assert_int_equal(pthread_join(t1, NULL), 0);
    assert_int_equal(pthread_join(t2, NULL), 0);
    assert_int_equal(pthread_join(t3, NULL), 0);
    ASSERT_RC(first.rc, DLOCK_OK);
    ASSERT_RC(second.rc, DLOCK_OK);
    ASSERT_RC(third.rc, DLOCK_OK);
    assert_int_equal(first.turn, 1);
    assert_int_equal(second.turn, 2);
    assert_int_equal(third.turn, 3);
    printf("# held %lld ms (fair_wait_ms %lld): %d checks, first waiter refreshed %d times, "
           "%lld script calls by both, least deadline left %lld ms\n",
           (long long)held_ms, (long long)fair_wait, checks, refreshes, scripts, least_left);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_lock_free(lc);
    dlock_lock_free(ld);
    dlock_client_free(a);
    dlock_client_free(b);
    dlock_client_free(c);
    dlock_client_free(d);
    redis_fixture_stop(f);
}

/* ---- lost leases ------------------------------------------------------------------------- */

static void
test_key_deleted_behind_the_holder_fires_the_lost_callback_once_and_release_is_elost(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    lost_reset();
    redis_fixture *f = start_server();
    dlock_client *c = connect_client_cfg(f, (test_client_cfg){.watchdog_ms = 1500});
    dlock_lock *l = new_fair(c, "deleted");
    ASSERT_RC(dlock_lock_on_lost(l, record_lost, NULL), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(l, DLOCK_WATCHDOG), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "DEL deleted"), 1);
    bool fired = false;
    POLL_UNTIL(fired, lost_calls() >= 1, slack_ms(3000));
    assert_true(fired);
    lost_record lost = lost_get();
    assert_int_equal(lost.owner, dlock_thread_owner());
    assert_int_equal(lost.reason, DLOCK_ELOST);
    ASSERT_RC(dlock_lock_release(l), DLOCK_ELOST);
    ASSERT_RC(dlock_lock_release(l), DLOCK_ENOTOWNER);
    assert_int_equal(lost_calls(), 1);
    ASSERT_RC(dlock_lock_acquire(l, DLOCK_WATCHDOG), DLOCK_OK); /* and it works again */
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- bad input --------------------------------------------------------------------------- */

static void on_acquired_keep(dlock_lock *l, int status, void *arg);

static void test_bad_arguments_are_einval_without_any_io(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_options o;
    dlock_options_init(&o);
    assert_int_equal(o.fair_wait_ms, 5000);
    o.url = redis_fixture_unix_url(f);
    o.fair_wait_ms = 2; /* a third of it would be 0: no refresh interval */
    dlock_client *bad = (dlock_client *)&o;
    ASSERT_RC(dlock_client_new(&o, &bad), DLOCK_EINVAL);
    assert_ptr_equal(bad, (dlock_client *)&o);
    dlock_client *c = connect_client(f);
    dlock_lock *sentinel = (dlock_lock *)&o, *l = sentinel;
    ASSERT_RC(dlock_fairlock_new(NULL, "x", &l), DLOCK_EINVAL);
    ASSERT_RC(dlock_fairlock_new(c, NULL, &l), DLOCK_EINVAL);
    ASSERT_RC(dlock_fairlock_new(c, "", &l), DLOCK_EINVAL);
    ASSERT_RC(dlock_fairlock_new(c, "x", NULL), DLOCK_EINVAL);
    assert_ptr_equal(l, sentinel);
    l = new_fair(c, "x");
    long long before = redis_fixture_info_int(f, "stats", "total_commands_processed");
    ASSERT_RC(dlock_lock_try_acquire(l, -5, 1000), DLOCK_EINVAL);
    ASSERT_RC(dlock_lock_try_acquire(l, 100, 0), DLOCK_EINVAL);
    ASSERT_RC(dlock_lock_try_acquire(l, 100, -7), DLOCK_EINVAL);
    ASSERT_RC(dlock_lock_acquire_async(l, 0, 100, 1000, on_acquired_keep, NULL), DLOCK_EINVAL);
    ASSERT_RC(dlock_lock_acquire_async(l, 5, 100, 1000, NULL, NULL), DLOCK_EINVAL);
    ASSERT_RC(dlock_lock_hold_count(l, NULL), DLOCK_EINVAL);
    ASSERT_RC(dlock_lock_try_acquire(NULL, 0, 1000), DLOCK_EINVAL);
    ASSERT_RC(dlock_lock_release(NULL), DLOCK_EINVAL);
    uint64_t token = 9;
    ASSERT_RC(dlock_lock_token(l, &token), DLOCK_EINVAL); /* not a fenced lock */
    assert_int_equal(token, 9);
    /* the INFO itself is the only command the server saw */
    assert_int_equal(redis_fixture_info_int(f, "stats", "total_commands_processed"), before + 1);
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 0);
    dlock_lock_free(NULL);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_lock_key_of_another_type_is_eredis_and_nothing_changes(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = new_fair(c, "a-string");
    freeReplyObject(redis_fixture_cmd(f, "SET a-string hello"));
    ASSERT_RC(dlock_lock_try_acquire(l, 200, 1000), DLOCK_EREDIS);
    assert_non_null(strstr(dlock_last_error(), "WRONGTYPE"));
    ASSERT_RC(dlock_lock_release(l), DLOCK_EREDIS);
    ASSERT_RC(dlock_lock_force_release(l, NULL), DLOCK_EREDIS);
    char *v = redis_fixture_str(f, "GET a-string");
    assert_string_equal(v, "hello");
    free(v);
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 1); /* no queue, no timeout left */
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- the async face: 500 waiters, and a handle freed under a waiting acquire ------------- */

/* One async owner's acquire, recorded by its callback (which releases at once). */
typedef struct async_waiter {
    dlock_lock *l;
    uint64_t owner;
    int status;
    int turn; /* 1-based order of the acquire callbacks */
    int release_status;
    bool released;
    int64_t acquired_us;
} async_waiter;

static int async_turns;

static void on_released(dlock_lock *l, int status, void *arg) {
    (void)l;
    async_waiter *w = arg;
    w->release_status = status;
    w->released = true;
}

static void on_acquired_release_at_once(dlock_lock *l, int status, void *arg) {
    async_waiter *w = arg;
    w->status = status;
    w->turn = ++async_turns;
    w->acquired_us = test_now_us();
    if (status == DLOCK_OK && dlock_lock_release_async(l, w->owner, on_released, w) != DLOCK_OK)
        w->release_status = -1000;
}

static void on_acquired_keep(dlock_lock *l, int status, void *arg) {
    (void)l;
    async_waiter *w = arg;
    w->status = status;
    w->turn = ++async_turns;
    w->acquired_us = test_now_us();
}

static void test_500_async_waiters_of_two_clients_are_served_in_queue_order(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    loop_app a;
    /* no refresh falls in the test (one every 10 s): every message and script call
     * below is a hand-off's */
    app_open(&a, &(test_client_cfg){.fair_wait_ms = 30000}, 2);
    dlock_client *const clients[2] = {a.c, a.c2};
    long n = test_scaled(500);
    if (n < 50)
        n = 50;
    const char *name = "five-hundred";
    dlock_lock *l[2];
    for (int i = 0; i < 2; i++)
        ASSERT_RC(dlock_fairlock_new(clients[i], name, &l[i]), DLOCK_OK);
    async_waiter holder = {.l = l[0], .owner = 1, .status = 1};
    async_turns = 0;
    ASSERT_RC(dlock_lock_acquire_async(l[0], 1, 0, 60000, on_acquired_keep, &holder), DLOCK_OK);
    bool ok = false;
    RUN_LOOP_UNTIL(a.loop, ok, holder.turn == 1, slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(holder.status, DLOCK_OK);
    async_turns = 0;

    async_waiter *w = calloc((size_t)n, sizeof(*w));
    assert_non_null(w);
    long long scripts_queueing = script_calls(a.f);
    int64_t queue_start = test_now_ms();
    for (long i = 0; i < n; i++) {
        /* alternating clients, owners 1000 + i; submitted in order, but two clients'
         * connections need not deliver in that order: the queue in Redis is the truth */
        w[i] = (async_waiter){.l = l[i % 2], .owner = 1000 + (uint64_t)i, .status = 1};
        ASSERT_RC(dlock_lock_acquire_async(w[i].l, w[i].owner, DLOCK_FOREVER, 60000,
                                           on_acquired_release_at_once, &w[i]),
                  DLOCK_OK);
    }
    /* all asleep: in line, subscribed, and their attempt after the subscription done */
    RUN_LOOP_UNTIL(a.loop, ok,
                   queue_len(a.f, name) == n && channels_of(a.f, name) == n &&
                       script_calls(a.f) >= scripts_queueing + 2 * n,
                   slack_ms(20000));
    if (!ok)
        fail_msg("%lld in line, %lld channels, %lld script calls of %ld waiters",
                 queue_len(a.f, name), channels_of(a.f, name), script_calls(a.f) - scripts_queueing,
                 n);
    int64_t queued_ms = test_now_ms() - queue_start;
    /* the queue, read once: position -> waiter */
    long *expected = calloc((size_t)n, sizeof(*expected));
    assert_non_null(expected);
    redisReply *r = redis_fixture_cmd(a.f, "LRANGE redisson_lock_queue:{%s} 0 -1", name);
    assert_true(r && r->type == REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, (size_t)n);
    for (long pos = 0; pos < n; pos++) {
        expected[pos] = -1;
        for (int k = 0; k < 2 && expected[pos] < 0; k++) {
            const char *id = dlock_client_id(clients[k]);
            size_t idlen = strlen(id);
            const char *s = r->element[pos]->str;
            if (strncmp(s, id, idlen) == 0 && s[idlen] == ':') {
                long i = (long)(strtoull(s + idlen + 1, NULL, 10) - 1000);
                if (i >= 0 && i < n && i % 2 == k)
                    expected[pos] = i;
            }
        }
        if (expected[pos] < 0)
            fail_msg("queue position %ld holds an unknown field %s", pos, r->element[pos]->str);
    }
    freeReplyObject(r);
    long long scripts_before = script_calls(a.f);
    long long publish_before = redis_fixture_info_int(a.f, "commandstats", "cmdstat_publish.calls");

    async_waiter holder_release = {0};
    ASSERT_RC(dlock_lock_release_async(l[0], 1, on_released, &holder_release), DLOCK_OK);
    int64_t released_us = test_now_us();
    RUN_LOOP_UNTIL(a.loop, ok, async_turns == n && w[expected[n - 1]].released, slack_ms(30000));
    if (!ok)
        fail_msg("%d of %ld waiters served", async_turns, n);
    int64_t chain_us = w[expected[n - 1]].acquired_us - released_us;
    long long scripts = script_calls(a.f) - scripts_before;
    long long publishes =
        redis_fixture_info_int(a.f, "commandstats", "cmdstat_publish.calls") - publish_before;
    ASSERT_RC(holder_release.release_status, DLOCK_OK);
    long violations = 0, first_violation = -1;
    for (long pos = 0; pos < n; pos++) {
        async_waiter *x = &w[expected[pos]];
        ASSERT_RC(x->status, DLOCK_OK);
        ASSERT_RC(x->release_status, DLOCK_OK);
        if (x->turn != pos + 1 && violations++ == 0)
            first_violation = pos;
    }
    if (violations)
        fail_msg("%ld waiters served out of queue order; first at position %ld (turn %d)",
                 violations, first_violation, w[expected[first_violation]].turn);
    /* one acquire and one release per waiter (and the holder's release), one message per
     * release to the next in line only; at most one more message and attempt per hand-off
     * (a taker may tell the next in line about its lease). A herd would be O(n^2). */
    ASSERT_BETWEEN(scripts, 2 * n + 1, 3 * n + 1);
    ASSERT_BETWEEN(publishes, n, 2 * n);
    assert_int_equal(redis_fixture_int(a.f, "EXISTS %s", name), 0);
    assert_int_equal(queue_len(a.f, name), 0);
    printf("# %ld waiters of 2 clients queued in %lld ms, served in queue order in %.1f ms "
           "(%.3f ms per hand-off); %lld script calls, %lld PUBLISH\n",
           n, (long long)queued_ms, (double)chain_us / 1000.0,
           (double)chain_us / 1000.0 / (double)n, scripts, publishes);
    free(expected);
    free(w);
    for (int i = 0; i < 2; i++)
        dlock_lock_free(l[i]);
    app_close(&a);
}

static void
test_async_waiter_whose_handle_is_freed_leaves_the_queue_and_the_next_is_not_delayed(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    loop_app a;
    app_open(&a, NULL, 2);
    dlock_client *const clients[2] = {a.c, a.c2};
    const char *name = "canceled";
    dlock_lock *mine = NULL, *doomed = NULL, *other = NULL;
    ASSERT_RC(dlock_fairlock_new(clients[0], name, &mine), DLOCK_OK);
    ASSERT_RC(dlock_fairlock_new(clients[0], name, &doomed), DLOCK_OK);
    ASSERT_RC(dlock_fairlock_new(clients[1], name, &other), DLOCK_OK);
    async_turns = 0;
    async_waiter holder = {.l = mine, .owner = 1, .status = 1};
    async_waiter canceled = {.l = doomed, .owner = 2, .status = 1};
    async_waiter next = {.l = other, .owner = 3, .status = 1};
    ASSERT_RC(dlock_lock_acquire_async(mine, 1, 0, 60000, on_acquired_keep, &holder), DLOCK_OK);
    bool ok = false;
    RUN_LOOP_UNTIL(a.loop, ok, holder.turn == 1, slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(holder.status, DLOCK_OK);
    async_turns = 0;
    ASSERT_RC(
        dlock_lock_acquire_async(doomed, 2, DLOCK_FOREVER, 60000, on_acquired_keep, &canceled),
        DLOCK_OK);
    RUN_LOOP_UNTIL(a.loop, ok, queue_len(a.f, name) == 1, slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(dlock_lock_acquire_async(other, 3, DLOCK_FOREVER, 60000, on_acquired_keep, &next),
              DLOCK_OK);
    RUN_LOOP_UNTIL(a.loop, ok, queue_len(a.f, name) == 2, slack_ms(5000));
    assert_true(ok);
    char f2[FIELD_MAX], f3[FIELD_MAX], want[512], q[1024];
    owner_field(clients[0], 2, f2, sizeof(f2));
    owner_field(clients[1], 3, f3, sizeof(f3));
    snprintf(want, sizeof(want), "%s,%s,", f2, f3);
    queue_dump(a.f, name, q, sizeof(q));
    assert_string_equal(q, want);
    char channel[512];
    waiter_channel(name, f3, channel, sizeof(channel));
    RUN_LOOP_UNTIL(a.loop, ok, numsub(a.f, channel) == 1, slack_ms(5000)); /* asleep */
    assert_true(ok);

    dlock_lock_free(doomed); /* its waiting acquire is canceled */
    int64_t freed_ms = test_now_ms();
    RUN_LOOP_UNTIL(a.loop, ok, canceled.turn > 0, slack_ms(2000));
    assert_true(ok);
    ASSERT_RC(canceled.status, DLOCK_ECANCELED);
    snprintf(want, sizeof(want), "%s,", f3);
    RUN_LOOP_UNTIL(a.loop, ok, (queue_dump(a.f, name, q, sizeof(q)), strcmp(q, want) == 0),
                   slack_ms(500));
    if (!ok)
        fail_msg("queue [%s], expected [%s]", q, want);
    int64_t left_ms = test_now_ms() - freed_ms;
    async_waiter holder_release = {0};
    ASSERT_RC(dlock_lock_release_async(mine, 1, on_released, &holder_release), DLOCK_OK);
    int64_t released_us = test_now_us();
    RUN_LOOP_UNTIL(a.loop, ok, next.turn > 0, slack_ms(3000));
    assert_true(ok);
    ASSERT_RC(next.status, DLOCK_OK);
    int64_t latency_ms = (next.acquired_us - released_us) / 1000;
    ASSERT_BETWEEN(latency_ms, 0, slack_ms(100));
    async_waiter next_release = {0};
    ASSERT_RC(dlock_lock_release_async(other, 3, on_released, &next_release), DLOCK_OK);
    RUN_LOOP_UNTIL(a.loop, ok, next_release.released && holder_release.released, slack_ms(3000));
    assert_true(ok);
    ASSERT_RC(next_release.release_status, DLOCK_OK);
    assert_int_equal(canceled.turn, 1); /* the cancellation came first, exactly once */
    assert_int_equal(next.turn, 2);
    printf("# canceled waiter out of the queue within %lld ms; next in %lld ms after the "
           "release\n",
           (long long)left_ms, (long long)latency_ms);
    dlock_lock_free(mine);
    dlock_lock_free(other);
    app_close(&a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_hold_count_goes_0_1_0_2_1_0_through_acquire_release_acquire_acquire_release_release),
        cmocka_unit_test(
            test_release_by_another_thread_or_client_is_enotowner_and_the_lock_stays_held),
        cmocka_unit_test(test_holder_reacquires_at_once_while_others_wait_in_line),
        cmocka_unit_test(
            test_layout_queue_in_arrival_order_timeouts_at_server_time_plus_fair_wait_one_channel_each),
        cmocka_unit_test(
            test_name_with_a_brace_uses_queue_timeout_and_channel_without_extra_braces),
        cmocka_unit_test(test_release_publishes_0_to_the_first_waiter_only_and_no_herd_follows),
        cmocka_unit_test(test_waiter_of_another_client_gets_the_lock_within_100_ms_of_the_release),
        cmocka_unit_test(test_force_release_wakes_the_first_waiter_and_says_whether_it_was_held),
        cmocka_unit_test(test_waiter_sends_at_most_6_commands_during_a_1500_ms_wait),
        cmocka_unit_test(
            test_try_acquire_wait_0_on_a_held_lock_times_out_at_once_and_leaves_no_trace),
        cmocka_unit_test(
            test_waiter_that_times_out_leaves_the_queue_at_once_and_the_next_is_not_delayed),
        cmocka_unit_test(test_newcomer_does_not_overtake_a_waiter_until_its_deadline_passes),
        cmocka_unit_test(test_every_waiter_whose_deadline_passed_is_dropped_not_only_the_first),
        cmocka_unit_test_teardown(
            test_sigkilled_waiting_process_delays_the_next_waiter_by_at_most_fair_wait_ms,
            kill_child),
        cmocka_unit_test(
            test_live_waiters_keep_their_places_while_the_holder_holds_4_times_fair_wait_ms),
        cmocka_unit_test(
            test_key_deleted_behind_the_holder_fires_the_lost_callback_once_and_release_is_elost),
        cmocka_unit_test(test_bad_arguments_are_einval_without_any_io),
        cmocka_unit_test(test_lock_key_of_another_type_is_eredis_and_nothing_changes),
        cmocka_unit_test(test_500_async_waiters_of_two_clients_are_served_in_queue_order),
        cmocka_unit_test(
            test_async_waiter_whose_handle_is_freed_leaves_the_queue_and_the_next_is_not_delayed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
