/* test_wait.c — the waiting engine (src/core/wait.c) against a real redis-server.
 *
 * A test waiter stands in for a primitive: its object is "free" when a key exists, so an
 * attempt is `EXISTS key` (1: obtained; 0: DLOCK__BUSY with the waiter's hint), and a
 * release is `SET key` + `PUBLISH channel` made by the test through the fixture. Counting
 * attempts and reading the server's INFO proves what the engine promises: a busy waiter
 * sleeps until a message or its hint, it never polls, a message wakes as many waiters as
 * wake_count says, a wake a waiter cannot use goes to the next sleeper, cancel and
 * dlock_client_free end every waiter exactly once, and nothing stays subscribed.
 *
 * Waiters live on the client's loop thread and in static storage (a failed assert leaves
 * nothing dangling for the teardown that frees the client); the test thread starts and
 * cancels them through a small dlock__op (on_loop) and polls what their callbacks record
 * under a mutex. */
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

#include "core.h"
#include "core_call.h"
#include "redis_fixture.h"
#include "test_util.h"

#define BUDGET_S 30

#ifndef DLOCK_FOREVER
#define DLOCK_FOREVER (-1) /* dlock/lock.h's "no deadline", as dlock__wait_start takes it */
#endif

/* ---- the test waiter ------------------------------------------------------------------------ */

#define MAX_TRACE 32

typedef struct test_waiter {
    dlock__waiter w;
    /* set before the start */
    const char *key;     /* the object is free while this key exists */
    const char *channel; /* lives as long as the wait: a string literal */
    int64_t hint_ms;     /* BUSY hint; -1: none */
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

static void deliver(test_waiter *t, int status, int64_t hint) {
    pthread_mutex_lock(&mu);
    if (t->replies < MAX_TRACE)
        t->reply_ms[t->replies] = dlock__now_ms();
    t->replies++;
    pthread_mutex_unlock(&mu);
    dlock__wait_result(&t->w, status, hint);
}

static void on_hold_over(dlock__timer *timer, void *arg) {
    (void)timer;
    test_waiter *t = arg;
    deliver(t, t->held_status, t->held_hint);
}

static void hold_until(test_waiter *t, int64_t due_ms, int status, int64_t hint) {
    t->held_status = status;
    t->held_hint = hint;
    dlock__timer_start_at(&t->w.client->sched, &t->hold, due_ms);
}

static int64_t race_hold_ms(void) {
    return test_slack_ms(150);
}

static void set_hold(dlock_client *c, void *arg) {
    (void)c;
    ((test_waiter *)arg)->hold_ms = race_hold_ms();
}

typedef struct attempt_ctx {
    test_waiter *t;
    bool woken;
} attempt_ctx;

static void on_exists(dlock_client *c, int status, const dlock__reply *reply, void *arg) {
    (void)c;
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

static void waiter_attempt(dlock__waiter *w) {
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

static void waiter_done(dlock__waiter *w, int status) {
    test_waiter *t = DLOCK__CONTAINER_OF(w, test_waiter, w);
    pthread_mutex_lock(&mu);
    t->done_calls++;
    t->done_status = status;
    t->done_ms = dlock__now_ms();
    t->done_inside_cancel = inside_cancel;
    pthread_mutex_unlock(&mu);
}

static int wake_one(const char *msg, size_t len) {
    (void)msg;
    (void)len;
    return 1;
}

static int wake_all(const char *msg, size_t len) {
    (void)msg;
    (void)len;
    return -1;
}

/* A message that is a decimal number announces that many units (permits) free. */
static bool units_supplied(const char *msg, size_t len, int64_t *available) {
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

static int64_t units_needed(const dlock__waiter *w) {
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

static test_waiter *waiter_reset(int i, const char *key, const char *channel, int64_t wait_ms,
                                 int64_t hint_ms, const dlock__wait_ops *ops) {
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

static seen look(const test_waiter *t) {
    pthread_mutex_lock(&mu);
    seen s = {t->attempts,    t->woken_attempts, t->replies, t->done_calls,
              t->done_status, t->started_ms,     t->done_ms, t->done_inside_cancel};
    pthread_mutex_unlock(&mu);
    return s;
}

static int attempts_of(const test_waiter *t) {
    return look(t).attempts;
}
static int done_calls_of(const test_waiter *t) {
    return look(t).done_calls;
}

/* Loop-thread steps. */
typedef struct waiter_set {
    test_waiter **ws;
    size_t n;
} waiter_set;

static void start_set(dlock_client *c, void *arg) {
    waiter_set *s = arg;
    for (size_t i = 0; i < s->n; i++) {
        test_waiter *t = s->ws[i];
        pthread_mutex_lock(&mu);
        t->started_ms = dlock__now_ms();
        pthread_mutex_unlock(&mu);
        dlock__wait_start(&t->w, c, t->ops, t->channel, t->wait_ms);
    }
}

static void cancel_set(dlock_client *c, void *arg) {
    (void)c;
    waiter_set *s = arg;
    inside_cancel = true;
    for (size_t i = 0; i < s->n; i++)
        dlock__wait_cancel(&s->ws[i]->w);
    inside_cancel = false;
}

static void start_waiters(dlock_client *c, test_waiter **ws, size_t n) {
    waiter_set s = {ws, n};
    on_loop(c, start_set, &s);
}

static void cancel_waiters(dlock_client *c, test_waiter **ws, size_t n) {
    waiter_set s = {ws, n};
    on_loop(c, cancel_set, &s);
}

/* Every waiter has had its answers in, made at least `min_attempts` and nothing more has
 * happened for 50 ms: with no hint it is asleep. */
static bool settled(test_waiter **ws, size_t n, int min_attempts) {
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

static void wait_settled(test_waiter **ws, size_t n, int min_attempts) {
    bool ok = false;
    POLL_UNTIL(ok, settled(ws, n, min_attempts), test_slack_ms(2000));
    assert_true(ok);
}

/* ---- reading the server's and the core's view ------------------------------------------------ */

static long long active_channels(redis_fixture *f) {
    redisReply *r = redis_fixture_cmd(f, "PUBSUB CHANNELS");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    long long n = (long long)r->elements;
    freeReplyObject(r);
    return n;
}

static long long subscribe_calls(redis_fixture *f) {
    return redis_fixture_info_int(f, "commandstats", "cmdstat_subscribe.calls");
}

typedef struct core_view {
    size_t queues, channels;
    int subscriber_state;
} core_view;

static void read_core_view(dlock_client *c, void *arg) {
    core_view *v = arg;
    v->queues = c->waits.queues.count;
    v->channels = c->pubsub.channels.count;
    v->subscriber_state = (int)c->pubsub.link.state;
}

static core_view core_view_of(dlock_client *c) {
    core_view v;
    on_loop(c, read_core_view, &v);
    return v;
}

static void set_key(redis_fixture *f, const char *key) {
    redisReply *r = redis_fixture_cmd(f, "SET %s 1", key);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
}

/* The object is freed: the key appears, then the release message. Returns when the
 * PUBLISH was answered; *at: when the key appeared. */
static void release(redis_fixture *f, const char *key, const char *channel, int64_t *at) {
    if (at)
        *at = test_now_ms();
    set_key(f, key);
    redisReply *r = redis_fixture_cmd(f, "PUBLISH %s %s", channel, "released");
    assert_non_null(r);
    freeReplyObject(r);
}

/* ---- per-test server and client ------------------------------------------------------------ */

typedef struct world {
    redis_fixture *f;
    dlock_client *c;
} world;

static int setup(void **state) {
    world *w = calloc(1, sizeof(*w));
    if (!w || redis_fixture_start(NULL, &w->f) != 0) {
        free(w);
        return -1;
    }
    dlock_options o;
    dlock_options_init(&o);
    o.url = redis_fixture_unix_url(w->f);
    o.retry_delay_ms = 20;
    if (dlock_client_new(&o, &w->c) != DLOCK_OK) {
        fprintf(stderr, "dlock_client_new: %s\n", dlock_last_error());
        redis_fixture_stop(w->f);
        free(w);
        return -1;
    }
    *state = w;
    return 0;
}

static int teardown(void **state) {
    world *w = *state;
    if (w) {
        redis_fixture_resume(w->f); /* in case a test stopped half-way through a pause */
        dlock_client_free(w->c);
        redis_fixture_stop(w->f);
        free(w);
    }
    test_watchdog_disarm();
    return 0;
}

/* ---- tests ---------------------------------------------------------------------------------- */

static void test_busy_waiter_sleeps_until_a_publish_wakes_it_within_100_ms(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    test_waiter *t = waiter_reset(0, "w:{wake}", "w:{wake}:ch", DLOCK_FOREVER, -1, &ops_wake_one);
    start_waiters(w->c, &t, 1);
    wait_settled(&t, 1, 2); /* the first try, and one once subscribed */
    assert_int_equal(attempts_of(t), 2);

    /* asleep: nothing happens while nothing is published */
    test_sleep_ms(300);
    assert_int_equal(attempts_of(t), 2);
    assert_int_equal(done_calls_of(t), 0);

    int64_t freed_at;
    release(w->f, t->key, t->channel, &freed_at);
    bool ok = false;
    POLL_UNTIL(ok, done_calls_of(t) == 1, test_slack_ms(1000));
    assert_true(ok);
    seen s = look(t);
    assert_int_equal(s.done_status, DLOCK_OK);
    assert_int_equal(s.attempts, 3);
    assert_int_equal(s.woken_attempts, 1);
    int64_t took = s.done_ms - freed_at;
    assert_true(took >= 0);
    assert_true(took <= test_slack_ms(100));
    printf("# obtained %lld ms after the key appeared and the message went out\n", (long long)took);
}

static void test_wait_zero_makes_one_attempt_and_times_out_without_subscribing(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    long long subscribes_before = subscribe_calls(w->f);
    test_waiter *t = waiter_reset(0, "w:{zero}", "w:{zero}:ch", 0, 30000, &ops_wake_one);
    start_waiters(w->c, &t, 1);
    bool ok = false;
    POLL_UNTIL(ok, done_calls_of(t) == 1, test_slack_ms(1000));
    assert_true(ok);
    test_sleep_ms(50);
    seen s = look(t);
    assert_int_equal(s.done_calls, 1);
    assert_int_equal(s.done_status, DLOCK_ETIMEDOUT);
    assert_int_equal(s.attempts, 1);
    assert_int_equal(subscribe_calls(w->f), subscribes_before);
    assert_int_equal(active_channels(w->f), 0);
    core_view v = core_view_of(w->c);
    assert_int_equal(v.queues, 0);
    assert_int_equal(v.channels, 0);
    assert_int_equal(v.subscriber_state, LINK_IDLE); /* not even connected */

    /* and when the object is free, wait 0 obtains it with that one attempt */
    set_key(w->f, "w:{zero}");
    t = waiter_reset(1, "w:{zero}", "w:{zero}:ch", 0, 30000, &ops_wake_one);
    start_waiters(w->c, &t, 1);
    POLL_UNTIL(ok, done_calls_of(t) == 1, test_slack_ms(1000));
    assert_true(ok);
    assert_int_equal(look(t).done_status, DLOCK_OK);
    assert_int_equal(look(t).attempts, 1);
}

static void test_wait_300_ms_on_an_object_never_freed_times_out_after_300_to_600_ms(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    /* the holder's lease says 30 s: only the deadline can end this wait */
    test_waiter *t = waiter_reset(0, "w:{held}", "w:{held}:ch", 300, 30000, &ops_wake_one);
    int64_t t0 = test_now_ms();
    start_waiters(w->c, &t, 1);
    bool ok = false;
    POLL_UNTIL(ok, done_calls_of(t) == 1, test_slack_ms(2000));
    assert_true(ok);
    seen s = look(t);
    assert_int_equal(s.done_status, DLOCK_ETIMEDOUT);
    assert_true(s.done_ms - s.started_ms >= 300); /* never early */
    int64_t took = s.done_ms - t0;
    assert_true(took <= test_slack_ms(600));
    /* the first try, one once subscribed, one at the deadline */
    assert_int_equal(s.attempts, 3);
    printf("# timed out after %lld ms\n", (long long)took);
}

static void test_waiting_without_a_hint_does_not_poll_the_server(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    test_waiter *t = waiter_reset(0, "w:{quiet}", "w:{quiet}:ch", 1500, -1, &ops_wake_one);
    long long before = redis_fixture_info_int(w->f, "stats", "total_commands_processed");
    start_waiters(w->c, &t, 1);
    bool ok = false;
    POLL_UNTIL(ok, done_calls_of(t) == 1, test_slack_ms(3000));
    assert_true(ok);
    test_sleep_ms(20); /* let the UNSUBSCRIBE land */
    long long after = redis_fixture_info_int(w->f, "stats", "total_commands_processed");
    seen s = look(t);
    assert_int_equal(s.done_status, DLOCK_ETIMEDOUT);
    assert_true(s.done_ms - s.started_ms >= 1500);
    assert_true(s.attempts <= 3);
    /* 3 EXISTS + SUBSCRIBE + UNSUBSCRIBE; the first INFO counts itself in the second */
    long long ours = after - before - 1;
    assert_true(ours >= s.attempts); /* the count does see the attempts */
    assert_true(ours <= 6);
    printf("# 1.5 s wait: %d attempts, %lld commands on the server\n", s.attempts, ours);
}

static void test_lost_message_costs_one_hint_then_the_waiter_obtains(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    /* a hint that outlasts the setup on a slow machine, so the key surely appears before the
     * retry */
    const int64_t hint = test_slack_ms(100);
    test_waiter *t = waiter_reset(0, "w:{lost}", "w:{lost}:ch", 20000, hint, &ops_wake_one);
    start_waiters(w->c, &t, 1);
    bool ok = false;
    POLL_UNTIL(ok, look(t).replies == 2, test_slack_ms(2000));
    assert_true(ok);
    /* freed, but the message is lost: only the hint brings the waiter back */
    set_key(w->f, t->key);
    assert_int_equal(attempts_of(t), 2); /* the key appeared before the retry */
    POLL_UNTIL(ok, done_calls_of(t) == 1, test_slack_ms(2000));
    assert_true(ok);
    pthread_mutex_lock(&mu);
    int64_t slept = t->attempt_ms[2] - t->reply_ms[1];
    pthread_mutex_unlock(&mu);
    seen s = look(t);
    assert_int_equal(s.done_status, DLOCK_OK);
    assert_int_equal(s.attempts, 3);
    assert_true(slept >= hint - 1); /* the hint, not sooner (ms clock granularity) */
    assert_true(slept <= hint + test_slack_ms(150));
    printf("# retried %lld ms after the busy answer (hint %lld ms)\n", (long long)slept,
           (long long)hint);
}

static void test_message_during_an_attempt_makes_the_busy_waiter_try_again_not_sleep(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    test_waiter *t = waiter_reset(0, "w:{race}", "w:{race}:ch", DLOCK_FOREVER, -1, &ops_wake_one);
    start_waiters(w->c, &t, 1);
    wait_settled(&t, 1, 2);
    /* from now on every answer reaches the engine 300 ms after the server gave it */
    on_loop(w->c, set_hold, t);
    redisReply *r = redis_fixture_cmd(w->f, "PUBLISH %s %s", "w:{race}:ch", "not-yet");
    assert_non_null(r);
    freeReplyObject(r);
    bool ok = false;
    POLL_UNTIL(ok, attempts_of(t) == 3, test_slack_ms(1000));
    assert_true(ok);
    /* the attempt found it busy; before that answer is in, the object is freed and the
     * message arrives: the waiter must not go to sleep on the stale "busy" */
    test_sleep_ms(20);
    assert_int_equal(look(t).replies, 2);
    release(w->f, t->key, t->channel, NULL);
    /* the release came while "busy" was held back: the case under test */
    assert_int_equal(look(t).replies, 2);
    POLL_UNTIL(ok, done_calls_of(t) == 1, 2 * race_hold_ms() + test_slack_ms(1000));
    assert_true(ok);
    seen s = look(t);
    assert_int_equal(s.done_status, DLOCK_OK);
    assert_int_equal(s.attempts, 4);
}

static void test_waiters_attempt_again_when_their_killed_subscription_comes_back(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    test_waiter *ws[2];
    ws[0] = waiter_reset(0, "w:{outage}", "w:{outage}:ch", DLOCK_FOREVER, -1, &ops_wake_one);
    ws[1] = waiter_reset(1, "w:{outage}", "w:{outage}:ch", DLOCK_FOREVER, -1, &ops_wake_one);
    start_waiters(w->c, ws, 2);
    wait_settled(ws, 2, 2);
    /* freed, but its message is lost (as it would be while the subscription is down):
     * the waiters sleep on */
    set_key(w->f, "w:{outage}");
    test_sleep_ms(100);
    assert_int_equal(attempts_of(ws[0]) + attempts_of(ws[1]), 4);
    /* the subscription drops and comes back: every waiter looks again (even with
     * wake_count 1, as nothing was said) */
    assert_int_equal(redis_fixture_client_kill_type(w->f, "pubsub"), 1);
    bool ok = false;
    POLL_UNTIL(ok, done_calls_of(ws[0]) == 1 && done_calls_of(ws[1]) == 1, test_slack_ms(3000));
    assert_true(ok);
    assert_int_equal(look(ws[0]).done_status, DLOCK_OK);
    assert_int_equal(look(ws[1]).done_status, DLOCK_OK);
    assert_int_equal(look(ws[0]).attempts, 3);
    assert_int_equal(look(ws[1]).attempts, 3);
}

static void test_one_message_with_wake_count_1_wakes_exactly_one_of_three_sleepers(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    test_waiter *ws[3];
    for (int i = 0; i < 3; i++)
        ws[i] = waiter_reset(i, "w:{one}", "w:{one}:ch", DLOCK_FOREVER, -1, &ops_wake_one);
    start_waiters(w->c, ws, 3);
    wait_settled(ws, 3, 2);
    for (int i = 0; i < 3; i++)
        assert_int_equal(attempts_of(ws[i]), 2);

    redisReply *r = redis_fixture_cmd(w->f, "PUBLISH %s %s", "w:{one}:ch", "freed-one");
    assert_non_null(r);
    assert_int_equal(r->integer, 1); /* one subscription for the three */
    freeReplyObject(r);
    bool ok = false;
    POLL_UNTIL(ok, attempts_of(ws[0]) + attempts_of(ws[1]) + attempts_of(ws[2]) >= 7,
               test_slack_ms(1000));
    assert_true(ok);
    test_sleep_ms(test_slack_ms(300));
    assert_int_equal(attempts_of(ws[0]), 3); /* the oldest sleeper */
    assert_int_equal(look(ws[0]).woken_attempts, 1);
    assert_int_equal(attempts_of(ws[1]), 2);
    assert_int_equal(attempts_of(ws[2]), 2);
    for (int i = 0; i < 3; i++)
        assert_int_equal(done_calls_of(ws[i]), 0);

    cancel_waiters(w->c, ws, 3);
    POLL_UNTIL(ok, done_calls_of(ws[0]) + done_calls_of(ws[1]) + done_calls_of(ws[2]) == 3,
               test_slack_ms(1000));
    assert_true(ok);
    for (int i = 0; i < 3; i++)
        assert_int_equal(look(ws[i]).done_status, DLOCK_ECANCELED);
}

static void test_one_message_with_wake_count_all_or_null_wakes_all_three_sleepers(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    test_waiter *ws[6];
    for (int i = 0; i < 3; i++) /* wake_count NULL */
        ws[i] = waiter_reset(i, "w:{all}", "w:{all}:ch", DLOCK_FOREVER, -1, &ops_wake_default);
    for (int i = 3; i < 6; i++) /* wake_count -1 */
        ws[i] = waiter_reset(i, "w:{all2}", "w:{all2}:ch", DLOCK_FOREVER, -1, &ops_wake_all);
    start_waiters(w->c, ws, 6);
    wait_settled(ws, 6, 2);

    redisReply *r = redis_fixture_cmd(w->f, "PUBLISH %s %s", "w:{all}:ch", "freed-all");
    assert_non_null(r);
    freeReplyObject(r);
    r = redis_fixture_cmd(w->f, "PUBLISH %s %s", "w:{all2}:ch", "freed-all");
    assert_non_null(r);
    freeReplyObject(r);
    bool ok = false;
    POLL_UNTIL(ok, settled(ws, 6, 3), test_slack_ms(1000));
    assert_true(ok);
    for (int i = 0; i < 6; i++) {
        assert_int_equal(attempts_of(ws[i]), 3);
        assert_int_equal(look(ws[i]).woken_attempts, 1);
    }

    /* the same with the object free: all three of a channel obtain on one message */
    release(w->f, "w:{all}", "w:{all}:ch", NULL);
    POLL_UNTIL(ok, done_calls_of(ws[0]) + done_calls_of(ws[1]) + done_calls_of(ws[2]) == 3,
               test_slack_ms(1000));
    assert_true(ok);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(look(ws[i]).done_status, DLOCK_OK);
        assert_int_equal(attempts_of(ws[i]), 4);
    }
    cancel_waiters(w->c, ws + 3, 3);
    POLL_UNTIL(ok, done_calls_of(ws[3]) + done_calls_of(ws[4]) + done_calls_of(ws[5]) == 3,
               test_slack_ms(1000));
    assert_true(ok);
}

/* Publishes msg on channel, then waits until the waiters are asleep again. */
static void announce(world *w, const char *channel, const char *msg, test_waiter **ws, size_t n) {
    redisReply *r = redis_fixture_cmd(w->f, "PUBLISH %s %s", channel, msg);
    assert_non_null(r);
    assert_int_equal(r->integer, 1);
    freeReplyObject(r);
    test_sleep_ms(20);
    wait_settled(ws, n, 2);
}

/* Each waiter has made exactly expect[i] attempts since base[i] was taken. */
static void assert_attempts_since(test_waiter **ws, const int *base, const int *expect, int n) {
    for (int i = 0; i < n; i++) {
        int extra = attempts_of(ws[i]) - base[i];
        if (extra != expect[i])
            printf("# waiter %d (need %lld): %d attempts since, expected %d\n", i,
                   (long long)ws[i]->need, extra, expect[i]);
        assert_int_equal(extra, expect[i]);
    }
}

static void
test_supply_message_wakes_the_oldest_waiters_that_fit_and_stops_at_the_first_misfit(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    static const int64_t needs[4] = {2, 1, 1, 3}; /* A, B, C, D in arrival order */
    test_waiter *ws[4];
    for (int i = 0; i < 4; i++) {
        ws[i] = waiter_reset(i, "w:{units}", "w:{units}:ch", DLOCK_FOREVER, -1, &ops_supply);
        ws[i]->need = needs[i];
    }
    start_waiters(w->c, ws, 4);
    wait_settled(ws, 4, 2);
    int base[4];
    for (int i = 0; i < 4; i++)
        base[i] = attempts_of(ws[i]);

    announce(w, "w:{units}:ch", "2", ws, 4); /* A (2) fits; B would not */
    assert_attempts_since(ws, base, (const int[]){1, 0, 0, 0}, 4);
    announce(w, "w:{units}:ch", "3", ws, 4); /* A (2) + B (1); C would not */
    assert_attempts_since(ws, base, (const int[]){2, 1, 0, 0}, 4);
    announce(w, "w:{units}:ch", "1", ws, 4); /* A does not fit: B may not overtake it */
    assert_attempts_since(ws, base, (const int[]){2, 1, 0, 0}, 4);
    announce(w, "w:{units}:ch", "7", ws, 4); /* everyone: 2 + 1 + 1 + 3 */
    assert_attempts_since(ws, base, (const int[]){3, 2, 1, 1}, 4);
    announce(w, "w:{units}:ch", "freed", ws, 4); /* not a supply: wake_count (1) */
    assert_attempts_since(ws, base, (const int[]){4, 2, 1, 1}, 4);

    cancel_waiters(w->c, ws, 4);
    bool ok = false;
    POLL_UNTIL(ok,
               done_calls_of(ws[0]) + done_calls_of(ws[1]) + done_calls_of(ws[2]) +
                       done_calls_of(ws[3]) ==
                   4,
               test_slack_ms(1000));
    assert_true(ok);
}

static void test_woken_waiter_that_times_out_hands_its_wake_to_the_next_sleeper(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    /* A is the oldest sleeper and gets the message's one wake; its attempt answers only
     * after A's deadline (busy: the freed place was not enough for A), so A times out
     * without having used the wake. B, next in line, must get it; C keeps sleeping. */
    test_waiter *ws[3];
    int64_t a_wait = test_slack_ms(300); /* outlasts the setup */
    ws[0] = waiter_reset(0, "w:{handoff}", "w:{handoff}:ch", a_wait, -1, &ops_wake_one);
    ws[0]->busy_late_when_woken = true;
    ws[1] = waiter_reset(1, "w:{handoff}", "w:{handoff}:ch", DLOCK_FOREVER, -1, &ops_wake_one);
    ws[2] = waiter_reset(2, "w:{handoff}", "w:{handoff}:ch", DLOCK_FOREVER, -1, &ops_wake_one);
    start_waiters(w->c, ws, 3);
    wait_settled(ws, 3, 2);
    release(w->f, "w:{handoff}", "w:{handoff}:ch", NULL);

    bool ok = false;
    POLL_UNTIL(ok, done_calls_of(ws[0]) == 1, a_wait + test_slack_ms(1000));
    assert_true(ok);
    assert_int_equal(look(ws[0]).done_status, DLOCK_ETIMEDOUT);
    assert_int_equal(look(ws[0]).woken_attempts, 1);
    POLL_UNTIL(ok, done_calls_of(ws[1]) == 1, test_slack_ms(500));
    if (!ok)
        printf("# B made %d attempts, C %d: the wake A did not use was dropped\n",
               attempts_of(ws[1]), attempts_of(ws[2]));
    assert_true(ok);
    assert_int_equal(look(ws[1]).done_status, DLOCK_OK);
    assert_int_equal(look(ws[1]).woken_attempts, 1);
    test_sleep_ms(50);
    assert_int_equal(attempts_of(ws[2]), 2);
    assert_int_equal(done_calls_of(ws[2]), 0);
    cancel_waiters(w->c, ws + 2, 1);
    POLL_UNTIL(ok, done_calls_of(ws[2]) == 1, test_slack_ms(1000));
    assert_true(ok);
}

static void
test_woken_waiter_canceled_during_its_attempt_hands_its_wake_to_the_next_sleeper(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    /* as above, but A leaves because it is canceled while its woken attempt is out */
    test_waiter *ws[3];
    for (int i = 0; i < 3; i++)
        ws[i] =
            waiter_reset(i, "w:{handoff2}", "w:{handoff2}:ch", DLOCK_FOREVER, -1, &ops_wake_one);
    ws[0]->busy_late_when_woken = true;
    start_waiters(w->c, ws, 3);
    wait_settled(ws, 3, 2);
    release(w->f, "w:{handoff2}", "w:{handoff2}:ch", NULL);
    bool ok = false;
    POLL_UNTIL(ok, look(ws[0]).woken_attempts == 1, test_slack_ms(1000));
    assert_true(ok);
    cancel_waiters(w->c, ws, 1); /* its answer is held back: still in flight */
    assert_int_equal(done_calls_of(ws[0]), 0);

    POLL_UNTIL(ok, done_calls_of(ws[0]) == 1, test_slack_ms(1000));
    assert_true(ok);
    assert_int_equal(look(ws[0]).done_status, DLOCK_ECANCELED);
    POLL_UNTIL(ok, done_calls_of(ws[1]) == 1, test_slack_ms(500));
    if (!ok)
        printf("# B made %d attempts, C %d: the wake A did not use was dropped\n",
               attempts_of(ws[1]), attempts_of(ws[2]));
    assert_true(ok);
    assert_int_equal(look(ws[1]).done_status, DLOCK_OK);
    test_sleep_ms(50);
    assert_int_equal(attempts_of(ws[2]), 2);
    cancel_waiters(w->c, ws + 2, 1);
    POLL_UNTIL(ok, done_calls_of(ws[2]) == 1, test_slack_ms(1000));
    assert_true(ok);
}

static void test_woken_waiter_whose_attempt_fails_hands_its_wake_to_the_next_sleeper(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    test_waiter *ws[3];
    ws[0] = waiter_reset(0, "w:{fail}", "w:{fail}:ch", DLOCK_FOREVER, -1, &ops_wake_one);
    ws[0]->fail_when_woken = true;
    ws[1] = waiter_reset(1, "w:{fail}", "w:{fail}:ch", DLOCK_FOREVER, -1, &ops_wake_one);
    ws[2] = waiter_reset(2, "w:{fail}", "w:{fail}:ch", DLOCK_FOREVER, -1, &ops_wake_one);
    start_waiters(w->c, ws, 3);
    wait_settled(ws, 3, 2);
    release(w->f, "w:{fail}", "w:{fail}:ch", NULL);

    bool ok = false;
    POLL_UNTIL(ok, done_calls_of(ws[0]) == 1 && done_calls_of(ws[1]) == 1, test_slack_ms(1000));
    assert_true(ok);
    assert_int_equal(look(ws[0]).done_status, DLOCK_ECONN); /* the attempt's error */
    assert_int_equal(look(ws[1]).done_status, DLOCK_OK);
    assert_int_equal(look(ws[1]).woken_attempts, 1);
    test_sleep_ms(50);
    assert_int_equal(attempts_of(ws[2]), 2); /* one wake, handed on once */
    cancel_waiters(w->c, ws + 2, 1);
    POLL_UNTIL(ok, done_calls_of(ws[2]) == 1, test_slack_ms(1000));
    assert_true(ok);
}

static void test_cancel_of_a_sleeping_waiter_ends_it_canceled_after_the_call_returns(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    test_waiter *t =
        waiter_reset(0, "w:{cancel}", "w:{cancel}:ch", DLOCK_FOREVER, -1, &ops_wake_one);
    start_waiters(w->c, &t, 1);
    wait_settled(&t, 1, 2);
    cancel_waiters(w->c, &t, 1);
    bool ok = false;
    POLL_UNTIL(ok, done_calls_of(t) == 1, test_slack_ms(1000));
    assert_true(ok);
    seen s = look(t);
    assert_int_equal(s.done_status, DLOCK_ECANCELED);
    assert_false(s.done_inside_cancel);
    assert_int_equal(s.attempts, 2); /* cancel does not try again */
    /* canceling again, after done, is harmless and calls nothing */
    cancel_waiters(w->c, &t, 1);
    test_sleep_ms(50);
    assert_int_equal(done_calls_of(t), 1);
    POLL_UNTIL(ok, active_channels(w->f) == 0, test_slack_ms(500));
    assert_true(ok);
}

static void test_cancel_during_an_attempt_waits_for_its_answer_and_keeps_a_success(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    /* every answer reaches the engine 200 ms late: the cancel lands while one is out */
    test_waiter *ws[2];
    ws[0] = waiter_reset(0, "w:{late-ok}", "w:{late}:ch", DLOCK_FOREVER, -1, &ops_wake_one);
    ws[1] = waiter_reset(1, "w:{late-busy}", "w:{late}:ch", DLOCK_FOREVER, -1, &ops_wake_one);
    ws[0]->hold_ms = ws[1]->hold_ms = 200;
    set_key(w->f, "w:{late-ok}");
    start_waiters(w->c, ws, 2);
    test_sleep_ms(50);
    cancel_waiters(w->c, ws, 2);
    test_sleep_ms(50);
    assert_int_equal(done_calls_of(ws[0]), 0); /* its attempt has not answered yet */
    assert_int_equal(done_calls_of(ws[1]), 0);
    bool ok = false;
    POLL_UNTIL(ok, done_calls_of(ws[0]) == 1 && done_calls_of(ws[1]) == 1, test_slack_ms(1000));
    assert_true(ok);
    assert_int_equal(look(ws[0]).done_status, DLOCK_OK); /* the attempt obtained it */
    assert_int_equal(look(ws[1]).done_status, DLOCK_ECANCELED);
    assert_int_equal(attempts_of(ws[0]), 1);
    assert_int_equal(attempts_of(ws[1]), 1);
    test_sleep_ms(50);
    assert_int_equal(done_calls_of(ws[0]) + done_calls_of(ws[1]), 2);
}

static void test_queue_leaves_no_subscription_behind_when_every_waiter_is_done(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    test_waiter *ws[5];
    /* two channels; each waiter ends another way: obtained, timed out, canceled */
    ws[0] = waiter_reset(0, "w:{gone-a}", "w:{gone-a}:ch", DLOCK_FOREVER, -1, &ops_wake_all);
    ws[1] = waiter_reset(1, "w:{gone-a}", "w:{gone-a}:ch", DLOCK_FOREVER, -1, &ops_wake_all);
    ws[2] = waiter_reset(2, "w:{gone-b}", "w:{gone-b}:ch", 400, -1, &ops_wake_one);
    ws[3] = waiter_reset(3, "w:{gone-b}", "w:{gone-b}:ch", DLOCK_FOREVER, -1, &ops_wake_one);
    ws[4] = waiter_reset(4, "w:{gone-b}", "w:{gone-b}:ch", DLOCK_FOREVER, 100, &ops_wake_one);
    start_waiters(w->c, ws, 5);
    bool ok = false;
    POLL_UNTIL(ok, active_channels(w->f) == 2, test_slack_ms(1000));
    assert_true(ok);
    release(w->f, "w:{gone-a}", "w:{gone-a}:ch", NULL);
    cancel_waiters(w->c, ws + 3, 1);
    int64_t deadline = test_now_ms() + test_slack_ms(2000);
    POLL_UNTIL(ok, done_calls_of(ws[0]) + done_calls_of(ws[1]) + done_calls_of(ws[2]) == 3,
               deadline - test_now_ms());
    assert_true(ok);
    /* the last one, polling by its 100 ms hint, obtains once the key appears */
    set_key(w->f, "w:{gone-b}");
    POLL_UNTIL(ok, done_calls_of(ws[3]) + done_calls_of(ws[4]) == 2, test_slack_ms(2000));
    assert_true(ok);
    assert_int_equal(look(ws[0]).done_status, DLOCK_OK);
    assert_int_equal(look(ws[1]).done_status, DLOCK_OK);
    assert_int_equal(look(ws[2]).done_status, DLOCK_ETIMEDOUT);
    assert_int_equal(look(ws[3]).done_status, DLOCK_ECANCELED);
    assert_int_equal(look(ws[4]).done_status, DLOCK_OK);

    POLL_UNTIL(ok, active_channels(w->f) == 0, test_slack_ms(500));
    assert_true(ok);
    core_view v = core_view_of(w->c);
    assert_int_equal(v.queues, 0);
    assert_int_equal(v.channels, 0);
}

static void test_client_free_ends_every_waiter_canceled_exactly_once(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    test_waiter *ws[5];
    ws[0] = waiter_reset(0, "w:{free-a}", "w:{free-a}:ch", DLOCK_FOREVER, -1, &ops_wake_one);
    ws[1] = waiter_reset(1, "w:{free-a}", "w:{free-a}:ch", DLOCK_FOREVER, -1, &ops_wake_one);
    ws[2] = waiter_reset(2, "w:{free-b}", "w:{free-b}:ch", 60000, 30000, &ops_wake_all);
    ws[3] = waiter_reset(3, "w:{free-b}", "w:{free-b}:ch", DLOCK_FOREVER, -1, &ops_wake_all);
    start_waiters(w->c, ws, 4);
    wait_settled(ws, 4, 2);
    /* and one whose first attempt is still out: the server answers nothing now */
    ws[4] = waiter_reset(4, "w:{free-c}", "w:{free-c}:ch", DLOCK_FOREVER, -1, &ops_wake_one);
    assert_int_equal(redis_fixture_pause(w->f), 0);
    start_waiters(w->c, ws + 4, 1);
    test_sleep_ms(20);
    assert_int_equal(attempts_of(ws[4]), 1);
    assert_int_equal(look(ws[4]).replies, 0);

    dlock_client *c = w->c;
    w->c = NULL;
    assert_int_equal(dlock_client_free(c), DLOCK_OK);
    assert_int_equal(redis_fixture_resume(w->f), 0);
    for (int i = 0; i < 5; i++) {
        seen s = look(ws[i]);
        assert_int_equal(s.done_calls, 1);
        assert_int_equal(s.done_status, DLOCK_ECANCELED);
    }
    /* nobody subscribed is left on the server either */
    bool ok = false;
    POLL_UNTIL(ok, active_channels(w->f) == 0, test_slack_ms(1000));
    assert_true(ok);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_busy_waiter_sleeps_until_a_publish_wakes_it_within_100_ms, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_wait_zero_makes_one_attempt_and_times_out_without_subscribing, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_wait_300_ms_on_an_object_never_freed_times_out_after_300_to_600_ms, setup,
            teardown),
        cmocka_unit_test_setup_teardown(test_waiting_without_a_hint_does_not_poll_the_server, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_lost_message_costs_one_hint_then_the_waiter_obtains,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_message_during_an_attempt_makes_the_busy_waiter_try_again_not_sleep, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_waiters_attempt_again_when_their_killed_subscription_comes_back, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_one_message_with_wake_count_1_wakes_exactly_one_of_three_sleepers, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_one_message_with_wake_count_all_or_null_wakes_all_three_sleepers, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_supply_message_wakes_the_oldest_waiters_that_fit_and_stops_at_the_first_misfit,
            setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_woken_waiter_that_times_out_hands_its_wake_to_the_next_sleeper, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_woken_waiter_canceled_during_its_attempt_hands_its_wake_to_the_next_sleeper, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_woken_waiter_whose_attempt_fails_hands_its_wake_to_the_next_sleeper, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_cancel_of_a_sleeping_waiter_ends_it_canceled_after_the_call_returns, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_cancel_during_an_attempt_waits_for_its_answer_and_keeps_a_success, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_queue_leaves_no_subscription_behind_when_every_waiter_is_done, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client_free_ends_every_waiter_canceled_exactly_once,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
