/* SPDX-License-Identifier: MIT */
/* test_fairlock.c — the fair lock (RFairLock) of src/fairlock/, blocking face, against a
 * real redis-server: hold counts and ownership as the reentrant lock; that a release
 * publishes "0" on the first waiter's channel only (no herd); the hand-off to a sleeping
 * waiter; force_release; that a waiter sends only its attempts, its subscription and its
 * refreshes; that a waiter that gives up (timeout, wait 0) leaves the queue at once and the
 * one behind is not kept waiting; the lost callback.
 *
 * Split by concern: the layout in Redis (test_fairlock_layout.c), waiters that stopped
 * refreshing or were SIGKILLed and live ones that keep their places
 * (test_fairlock_liveness.c), bad input and the async face (test_fairlock_async.c), threads
 * (test_fairlock_threads.c). Helpers: tests/support/fairlock_helpers.h.
 *
 * Every test starts its own server. Records written by the client's loop thread live in
 * static storage, so a failed assert leaves nothing dangling. */
#include "fairlock_helpers.h"

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
    /* reentrant: no queueing behind the waiter (with wait 0, queueing would time out) */
    ASSERT_RC(dlock_lock_try_acquire(la, 0, 30000), DLOCK_OK);
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

static void test_waiter_of_another_client_is_woken_by_the_release(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    /* the waiter refreshes its place every fair_wait_ms / 3 = TEST_SLOW_MS, and the holder's
     * lease is 30 s: only the release's message can let it in within test_prompt_ms() */
    dlock_client *b = connect_client_cfg(f, (test_client_cfg){.fair_wait_ms = 3 * TEST_SLOW_MS});
    dlock_lock *la = new_fair(a, "handoff");
    dlock_lock *lb = new_fair(b, "handoff");
    const int rounds = 5;
    int64_t worst_us = INT64_MIN, total_us = 0;
    for (int i = 0; i < rounds; i++) {
        atomic_store(&turns, 0);
        ASSERT_RC(dlock_lock_acquire(la, 30000), DLOCK_OK);
        waiter w = {.c = b, .l = lb, .wait_ms = slack_ms(10000)};
        pthread_t t = start_sleeping_waiter(f, "handoff", &w);
        int64_t release_start_us = test_now_us();
        ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
        int64_t released_us = test_now_us();
        assert_int_equal(pthread_join(t, NULL), 0);
        ASSERT_RC(w.rc, DLOCK_OK);
        int64_t latency_us = w.acquired_us - released_us;
        if (latency_us > worst_us)
            worst_us = latency_us;
        total_us += latency_us;
        assert_true(w.acquired_us >= release_start_us); /* not before the release */
        ASSERT_BETWEEN(latency_us / 1000, -test_prompt_ms(), test_prompt_ms());
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
    /* refreshes every TEST_SLOW_MS: no refresh lets the waiter in before the message does */
    dlock_client *b = connect_client_cfg(f, (test_client_cfg){.fair_wait_ms = 3 * TEST_SLOW_MS});
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
    int64_t force_start_us = test_now_us();
    ASSERT_RC(dlock_lock_force_release(lc, &was_locked), DLOCK_OK);
    int64_t forced_us = test_now_us();
    assert_true(was_locked);
    assert_int_equal(pthread_join(t, NULL), 0);
    ASSERT_RC(w.rc, DLOCK_OK);
    int64_t latency_ms = (w.acquired_us - forced_us) / 1000;
    assert_true(w.acquired_us >= force_start_us); /* not before the force release */
    ASSERT_BETWEEN(latency_ms, -test_prompt_ms(), test_prompt_ms());
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
    ASSERT_BETWEEN(took, 1500, 1500 + test_prompt_ms());
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
    /* a waiter would sleep until its refresh (fair_wait_ms / 3 = TEST_SLOW_MS) or the
     * holder's lease (60 s): a return within test_prompt_ms() is "at once" */
    dlock_client *b = connect_client_cfg(f, (test_client_cfg){.fair_wait_ms = 3 * TEST_SLOW_MS});
    dlock_lock *la = new_fair(a, "busy");
    dlock_lock *lb = new_fair(b, "busy");
    ASSERT_RC(dlock_lock_acquire(la, 60000), DLOCK_OK);
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_try_acquire(lb, 0, 30000), DLOCK_ETIMEDOUT);
    int64_t took = test_now_ms() - start;
    assert_true(strlen(dlock_last_error()) > 0);
    ASSERT_BETWEEN(took, 0, test_prompt_ms());
    bool gone = false;
    POLL_UNTIL(gone,
               redis_fixture_int(f, "EXISTS redisson_lock_queue:{busy}") == 0 &&
                   redis_fixture_int(f, "EXISTS redisson_lock_timeout:{busy}") == 0 &&
                   redis_fixture_int(f, "EXISTS {busy}:fair_waiters") == 0,
               test_prompt_ms());
    assert_true(gone);
    /* it never subscribed */
    assert_int_equal(subscribed_channels_matching(f, "redisson_lock__channel:*"), 0);
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
    /* what a stale entry would cost the next waiter, and the patient waiter's refresh
     * (fair_wait / 3): both far beyond test_prompt_ms() */
    const int64_t fair_wait = 3 * TEST_SLOW_MS;
    dlock_client *a = connect_client_cfg(f, (test_client_cfg){.fair_wait_ms = fair_wait});
    dlock_client *b = connect_client_cfg(f, (test_client_cfg){.fair_wait_ms = fair_wait});
    dlock_client *c = connect_client_cfg(f, (test_client_cfg){.fair_wait_ms = fair_wait});
    dlock_lock *la = new_fair(a, "gives-up");
    dlock_lock *lb = new_fair(b, "gives-up");
    dlock_lock *lc = new_fair(c, "gives-up");
    atomic_store(&turns, 0);
    ASSERT_RC(dlock_lock_acquire(la, 60000), DLOCK_OK);
    /* outlasts the start of the patient waiter on a loaded machine */
    waiter quitter = {.c = b, .l = lb, .wait_ms = slack_ms(1500)};
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
               test_prompt_ms());
    int64_t left_after = test_now_ms() - quitter.returned_ms;
    if (!left)
        fail_msg("queue [%s], expected [%s]", q, want);
    assert_int_equal(deadline_of(f, "gives-up", quitter.field), -1);
    /* the one behind is first now: the release wakes it, with no wait for a deadline */
    int64_t release_start_us = test_now_us();
    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    int64_t released_us = test_now_us();
    assert_int_equal(pthread_join(tp, NULL), 0);
    ASSERT_RC(patient.rc, DLOCK_OK);
    int64_t latency_ms = (patient.acquired_us - released_us) / 1000;
    assert_true(patient.acquired_us >= release_start_us); /* not before the release */
    ASSERT_BETWEEN(latency_ms, -test_prompt_ms(), test_prompt_ms());
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

/* ---- lost leases ------------------------------------------------------------------------- */

static void
test_key_deleted_behind_the_holder_fires_the_lost_callback_once_and_release_is_elost(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    lost_reset();
    redis_fixture *f = start_server();
    /* the renewal, not a late one's confirmed time running out, finds it gone (DLOCK_ELOST) */
    dlock_client *c = connect_client_cfg(f, (test_client_cfg){.watchdog_ms = TEST_WATCHDOG_MS});
    dlock_lock *l = new_fair(c, "deleted");
    ASSERT_RC(dlock_lock_on_lost(l, record_lost, NULL), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(l, DLOCK_WATCHDOG), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "DEL deleted"), 1);
    bool fired = false;
    POLL_UNTIL(fired, lost_calls() >= 1, TEST_WATCHDOG_MS / 3 + test_prompt_ms());
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_hold_count_goes_0_1_0_2_1_0_through_acquire_release_acquire_acquire_release_release),
        cmocka_unit_test(
            test_release_by_another_thread_or_client_is_enotowner_and_the_lock_stays_held),
        cmocka_unit_test(test_holder_reacquires_at_once_while_others_wait_in_line),
        cmocka_unit_test(test_release_publishes_0_to_the_first_waiter_only_and_no_herd_follows),
        cmocka_unit_test(test_waiter_of_another_client_is_woken_by_the_release),
        cmocka_unit_test(test_force_release_wakes_the_first_waiter_and_says_whether_it_was_held),
        cmocka_unit_test(test_waiter_sends_at_most_6_commands_during_a_1500_ms_wait),
        cmocka_unit_test(
            test_try_acquire_wait_0_on_a_held_lock_times_out_at_once_and_leaves_no_trace),
        cmocka_unit_test(
            test_waiter_that_times_out_leaves_the_queue_at_once_and_the_next_is_not_delayed),
        cmocka_unit_test(
            test_key_deleted_behind_the_holder_fires_the_lost_callback_once_and_release_is_elost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
