/* SPDX-License-Identifier: MIT */
/* test_kill_subscribers.c — subscriber connections killed while waiters wait, with the
 * mutual-exclusion checker (tests/support/checker.h) watching every critical section.
 *
 * What is proven:
 * - the subscriber connections killed (CLIENT KILL TYPE pubsub) while 6 threads of 2
 *   clients wait for a held lock, and the lock released right after: the release's message
 *   is lost with the connections, yet every waiter gets the lock within about a second
 *   (they resubscribe and try again), long before the holder's 30 s lease would have let
 *   them in; the same with a fair lock (each waiter subscribed on its own channel and in
 *   the line; the release wakes only the first, and the line is gone afterwards).
 *
 * Every test starts its own redis-server and prints its figures ("# ..."). */
#include "kill_helpers.h"

/* ---- scenario 3: subscriber connections killed while waiters wait ------------------------- */

#define PUBSUB_CLIENTS 2
#define PUBSUB_WAITERS 6

typedef struct pubsub_waiter {
    dlock_lock *l;
    checker *k;
    int id;
    atomic_int rc; /* 1 while waiting; read by the test thread meanwhile */
    int64_t acquired_ms;
} pubsub_waiter;

static void *pubsub_waiter_main(void *arg) {
    pubsub_waiter *w = arg;
    int rc = dlock_lock_acquire(w->l, 30000);
    w->acquired_ms = test_now_ms();
    if (rc == DLOCK_OK) {
        checker_exit(w->k, checker_enter(w->k, w->id), 0);
        rc = dlock_lock_release(w->l);
    }
    atomic_store(&w->rc, rc);
    checker_finished(w->k, w->id);
    return NULL;
}

/* One holder (30 s lease: a waiter that only got in by the holder's TTL would take 30 s), 6
 * waiting threads on 2 other clients, the subscriber connections killed, then the release.
 * refuse_reconnect: the server refuses new connections (maxclients) from the kill until
 * 300 ms after the release, so the release's message is certainly lost and the waiters
 * must find out on their own once they are back. */
/* The waiters' subscriptions: the lock's waiters of one client share the lock's channel
 * (one subscriber per client); each fair-lock waiter has a channel of its own
 * (redisson_lock__channel:{N}:<client-id>:<owner>, one subscriber each). */
static long long pubsub_subscribers(redis_fixture *f, lock_kind kind, const char *name) {
    if (kind != KIND_FAIR) {
        char channel[96];
        snprintf(channel, sizeof(channel), "redisson_lock__channel:{%s}", name);
        return numsub(f, channel);
    }
    redisReply *r = redis_fixture_cmd(f, "PUBSUB CHANNELS redisson_lock__channel:{%s}:*", name);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    long long n = 0;
    for (size_t i = 0; i < r->elements; i++)
        n += numsub(f, r->element[i]->str);
    freeReplyObject(r);
    return n;
}

/* Whether the server ran no script call for 50 ms (a quiet window: the waiters are
 * asleep) and at least at_least in all; *last is the count at the start of the window. */
static bool scripts_settled(redis_fixture *f, long long *last, long long at_least) {
    long long before = *last;
    test_sleep_ms(50);
    *last = script_calls(f);
    return *last == before && *last >= at_least;
}

static void run_pubsub_kill(lock_kind kind, bool refuse_reconnect) {
    redis_fixture *f = start_server();
    const char *name = kind == KIND_FAIR ? "pubsub-killed-fair" : "pubsub-killed";
    /* every waiter asleep: the lock's waiters, one subscription per client; the fair
     * lock's, one each, and all in the line */
    const long long subscribers = kind == KIND_FAIR ? PUBSUB_WAITERS : PUBSUB_CLIENTS;
    dlock_client *holder_client = connect_client(f);
    any_lock holder_lock;
    ASSERT_RC(make_lock(holder_client, name, kind, &holder_lock), DLOCK_OK);
    dlock_lock *holder = holder_lock.l;
    dlock_client *c[PUBSUB_CLIENTS];
    any_lock a[PUBSUB_CLIENTS];
    dlock_lock *l[PUBSUB_CLIENTS];
    for (int i = 0; i < PUBSUB_CLIENTS; i++) {
        c[i] = connect_client(f);
        ASSERT_RC(make_lock(c[i], name, kind, &a[i]), DLOCK_OK);
        l[i] = a[i].l;
    }
    checker *k = checker_new(name, PUBSUB_WAITERS, 64, false);
    long long scripts_before = script_calls(f);
    ASSERT_RC(dlock_lock_acquire(holder, 30000), DLOCK_OK);
    pubsub_waiter w[PUBSUB_WAITERS];
    pthread_t t[PUBSUB_WAITERS];
    for (int i = 0; i < PUBSUB_WAITERS; i++) {
        w[i] = (pubsub_waiter){.l = l[i % PUBSUB_CLIENTS], .k = k, .id = i};
        atomic_init(&w[i].rc, 1);
        assert_int_equal(pthread_create(&t[i], NULL, pubsub_waiter_main, &w[i]), 0);
    }
    /* every waiter asleep: both clients subscribed, and time for each waiter's attempt
     * after the subscription was confirmed */
    bool subscribed = false;
    POLL_UNTIL(subscribed,
               pubsub_subscribers(f, kind, name) == subscribers &&
                   (kind != KIND_FAIR ||
                    redis_fixture_int(f, "LLEN redisson_lock_queue:{%s}", name) == PUBSUB_WAITERS),
               test_slack_ms(3000));
    if (!subscribed)
        fail_msg("%lld subscribers, expected %lld", pubsub_subscribers(f, kind, name), subscribers);
    /* and each waiter's attempt after the subscription was confirmed made: no script call
     * for 50 ms, at least one per waiter since the holder's */
    long long scripts = script_calls(f);
    bool settled = false;
    POLL_UNTIL(settled, scripts_settled(f, &scripts, scripts_before + 1 + PUBSUB_WAITERS),
               test_slack_ms(3000));
    assert_true(settled);
    for (int i = 0; i < PUBSUB_WAITERS; i++)
        assert_int_equal(atomic_load(&w[i].rc), 1); /* still waiting */

    long long rejected_before = redis_fixture_info_int(f, "stats", "rejected_connections");
    if (refuse_reconnect) {
        long long connected = redis_fixture_info_int(f, "clients", "connected_clients");
        assert_true(connected > PUBSUB_CLIENTS);
        char *ok = redis_fixture_str(f, "CONFIG SET maxclients %lld", connected - PUBSUB_CLIENTS);
        assert_non_null(ok);
        free(ok);
    }
    int64_t refused_from = test_now_ms(); /* the window the refusals are counted in */
    int killed = redis_fixture_client_kill_type(f, "pubsub");
    assert_int_equal(killed, PUBSUB_CLIENTS);
    int64_t released_at = test_now_ms();
    ASSERT_RC(dlock_lock_release(holder), DLOCK_OK); /* its message finds nobody, or few */
    long long rejected = 0;
    int64_t refused_ms = 0;
    if (refuse_reconnect) {
        test_sleep_ms(300); /* the fault's window: no waiter can hear or come back */
        for (int i = 0; i < PUBSUB_WAITERS; i++)
            assert_int_equal(atomic_load(&w[i].rc), 1); /* nobody could know */
        rejected = redis_fixture_info_int(f, "stats", "rejected_connections") - rejected_before;
        refused_ms = test_now_ms() - refused_from;
        char *ok = redis_fixture_str(f, "CONFIG SET maxclients 10000");
        assert_non_null(ok);
        free(ok);
        released_at = test_now_ms(); /* from now on they can come back */
    }
    for (int i = 0; i < PUBSUB_WAITERS; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    int64_t last = 0;
    for (int i = 0; i < PUBSUB_WAITERS; i++) {
        if (atomic_load(&w[i].rc) != DLOCK_OK)
            fail_msg("waiter %d: %s", i, dlock_err_name(atomic_load(&w[i].rc)));
        if (w[i].acquired_ms - released_at > last)
            last = w[i].acquired_ms - released_at;
    }
    checker_report r = checker_check(k);
    printf("# %s: pubsub killed (%d connections)%s: all %d waiters in within %lld ms of %s; "
           "%lld subscribers now\n",
           kind_name(kind), killed, refuse_reconnect ? ", reconnects refused for 300 ms" : "",
           PUBSUB_WAITERS, (long long)last,
           refuse_reconnect ? "the server taking connections again" : "the release",
           pubsub_subscribers(f, kind, name));
    /* The reconnect backoff (src/core/net/link.c): the first attempt at once, then steps of
     * 10 ms doubling up to TEST_RETRY_DELAY_MS (100 ms), each a random point in its upper
     * half: per link at most 1 + 4 attempts in the first 75 ms, then one per 50 ms or
     * more, about 10 in the 300 ms. A link that reconnected at once was refused thousands
     * of times. Generous (10 + one per 50 ms of the window measured, per link), for a
     * loaded machine that stretches the window. */
    if (refuse_reconnect) {
        printf("# %lld connection attempts refused in %lld ms (%d subscriber links)\n", rejected,
               (long long)refused_ms, PUBSUB_CLIENTS);
        ASSERT_BETWEEN(rejected, 1, (10 + refused_ms / 50) * PUBSUB_CLIENTS);
    }
    assert_true(r.ok);
    assert_int_equal(r.sections, PUBSUB_WAITERS);
    /* back at once or after a reconnect backoff step (at most TEST_RETRY_DELAY_MS), then
     * one attempt each */
    ASSERT_BETWEEN(last, 0, refuse_reconnect ? test_slack_ms(2500) : test_slack_ms(1500));
    assert_int_equal(redis_fixture_int(f, "EXISTS %s", name), 0);
    if (kind == KIND_FAIR) { /* everybody left the line */
        assert_int_equal(redis_fixture_int(f, "EXISTS redisson_lock_queue:{%s}", name), 0);
        assert_int_equal(redis_fixture_int(f, "EXISTS redisson_lock_timeout:{%s}", name), 0);
    }

    checker_free(k);
    for (int i = 0; i < PUBSUB_CLIENTS; i++) {
        free_lock(&a[i]);
        dlock_client_free(c[i]);
    }
    free_lock(&holder_lock);
    dlock_client_free(holder_client);
    redis_fixture_stop(f);
}

static void
test_subscriber_connections_killed_while_six_waiters_wait_all_still_acquire(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    run_pubsub_kill(KIND_LOCK, false);
}

static void
test_subscriber_connections_killed_while_six_fair_waiters_wait_all_still_acquire(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    run_pubsub_kill(KIND_FAIR, false);
}

static void test_waiters_that_missed_the_release_while_reconnecting_still_acquire(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    run_pubsub_kill(KIND_LOCK, true);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_subscriber_connections_killed_while_six_waiters_wait_all_still_acquire),
        cmocka_unit_test(
            test_subscriber_connections_killed_while_six_fair_waiters_wait_all_still_acquire),
        cmocka_unit_test(test_waiters_that_missed_the_release_while_reconnecting_still_acquire),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
