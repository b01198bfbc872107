/* SPDX-License-Identifier: MIT */
/* test_redlock_faults.c — the redlock tests of test_redlock.c, split from it by concern: stopped
 * masters; a paused master; the members are asked at once. Helpers:
 * tests/support/redlock_helpers.h. Every test starts its own server.
 *
 * It takes most of a minute: each test starts five masters, and the validity test repeats
 * its round (pause three masters, resume them 30 ms after the call began) until a quorum
 * came back too late at least once, which a loaded machine may take many rounds to show. */
#include "redlock_helpers.h"

/* ---- stopped masters --------------------------------------------------------------------- */

static void test_acquire_with_2_masters_stopped_succeeds_on_the_other_3(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f[N];
    masters_start(f, N);
    masters_app a;
    /* queries go member by member: short command limits keep them quick with 2 down */
    test_client_cfg cfg = {.timeout_ms = 300, .retry_attempts = 1};
    masters_app_open(&a, f, N, NAME, &cfg, false);
    assert_int_equal(redis_fixture_kill(f[1]), 0);
    assert_int_equal(redis_fixture_kill(f[3]), 0);
    const bool alive[N] = {true, false, true, false, true};
    const int64_t lease = 10000; /* answer budget lease / 10 = 1000 ms */
    for (int round = 0; round < 3; round++) {
        int64_t start = test_now_ms();
        ASSERT_RC(dlock_lock_try_acquire(a.rl, TEST_SLOW_MS, lease), DLOCK_OK);
        int64_t took = test_now_ms() - start;
        /* at most the answer budget, and some; not the wait */
        ASSERT_BETWEEN(took, 0, 1000 + test_prompt_ms());
        expect_holds(f, &a, alive, 1); /* the 3 alive are the quorum */
        bool held = false;
        int64_t q0 = test_now_ms();
        ASSERT_RC(dlock_lock_is_held(a.rl, &held), DLOCK_OK);
        int64_t q1 = test_now_ms();
        assert_true(held);
        int64_t ttl = 0;
        ASSERT_RC(dlock_lock_ttl(a.rl, &ttl), DLOCK_OK);
        int64_t q2 = test_now_ms();
        ASSERT_BETWEEN(ttl, 1, lease);
        start = test_now_ms();
        ASSERT_RC(dlock_lock_release(a.rl), DLOCK_OK);
        int64_t released = test_now_ms() - start;
        expect_members_gone(f, alive);
        printf("# 2 of 5 stopped: acquired in %lld ms, released in %lld ms; is_held took %lld "
               "ms, ttl %lld ms (said %lld)\n",
               (long long)took, (long long)released, (long long)(q1 - q0), (long long)(q2 - q1),
               (long long)ttl);
    }
    masters_app_close(&a);
    masters_stop(f, N);
}

static void
test_acquire_with_3_masters_stopped_fails_in_bounded_time_and_leaves_nothing_held(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f[N];
    masters_start(f, N);
    masters_app a;
    masters_app_open(&a, f, N, NAME, NULL, false); /* default command limits: 3 s x 4 attempts */
    assert_int_equal(redis_fixture_kill(f[0]), 0);
    assert_int_equal(redis_fixture_kill(f[2]), 0);
    assert_int_equal(redis_fixture_kill(f[4]), 0);
    const bool alive[N] = {false, true, false, true, false};
    const int64_t lease = 10000, wait = 500; /* answer budget 1000 ms */
    for (int round = 0; round < 2; round++) {
        int64_t start = test_now_ms();
        int rc = dlock_lock_try_acquire(a.rl, wait, lease);
        int64_t took = test_now_ms() - start;
        printf("# 3 of 5 stopped: %s after %lld ms (%s)\n", dlock_err_name(rc), (long long)took,
               dlock_last_error());
        if (rc != DLOCK_ETIMEDOUT && rc != DLOCK_ECONN)
            fail_msg("try_acquire with 3 of 5 stopped = %s (%s)", dlock_err_name(rc),
                     dlock_last_error());
        /* the wait, plus at most one answer budget for the round under way */
        ASSERT_BETWEEN(took, wait - 50, wait + 1000 + test_prompt_ms());
        /* nothing of ours left on the 2 live masters by the time it returned: their
         * releases were waited for (an application may free its clients right away) */
        assert_int_equal(members_present(f, alive), 0);
    }
    masters_app_close(&a);
    masters_stop(f, N);
}

static void test_a_minority_taken_when_the_quorum_is_missed_is_given_back(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f[N];
    masters_start(f, N);
    masters_app a;
    masters_app_open(&a, f, N, NAME, NULL, false);
    /* another application holds "rl" directly on masters 0, 1 and 2 */
    dlock_client *oc[3];
    dlock_lock *ol[3];
    for (int i = 0; i < 3; i++) {
        oc[i] = connect_client(f[i]);
        ASSERT_RC(dlock_lock_new(oc[i], NAME, &ol[i]), DLOCK_OK);
        ASSERT_RC(dlock_lock_acquire(ol[i], 30000), DLOCK_OK);
    }
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_try_acquire(a.rl, 400, 10000), DLOCK_ETIMEDOUT);
    int64_t took = test_now_ms() - start;
    /* at its deadline: the other application's 30 s leases are no hint that ends it sooner */
    ASSERT_BETWEEN(took, 350, 400 + test_prompt_ms());
    /* masters 3 and 4 were ours in every round, and are given back */
    const bool minority[N] = {false, false, false, true, true};
    bool clear = false;
    POLL_UNTIL(clear, members_present(f, minority) == 0, test_prompt_ms());
    assert_true(clear);
    for (int i = 0; i < 3; i++)
        assert_int_equal(holds_on(f[i], a.c[i]), 0);
    /* with master 2 freed, 3 of 5 agree */
    ASSERT_RC(dlock_lock_release(ol[2]), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(a.rl, TEST_SLOW_MS, 10000), DLOCK_OK);
    const bool free_three[N] = {false, false, true, true, true};
    expect_holds(f, &a, free_three, 1); /* exactly a quorum was free */
    ASSERT_RC(dlock_lock_release(a.rl), DLOCK_OK);
    expect_members_gone(f, free_three);
    for (int i = 0; i < 2; i++)
        ASSERT_RC(dlock_lock_release(ol[i]), DLOCK_OK);
    for (int i = 0; i < 3; i++) {
        dlock_lock_free(ol[i]);
        dlock_client_free(oc[i]);
    }
    masters_app_close(&a);
    masters_stop(f, N);
}

static void test_hold_count_and_is_held_of_a_redlock_held_on_3_of_5_count_its_quorum(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f[N];
    masters_start(f, N);
    masters_app a;
    masters_app_open(&a, f, N, NAME, NULL, false);
    /* another application holds "rl" directly on masters 0 and 1 */
    dlock_client *oc[2];
    dlock_lock *ol[2];
    for (int i = 0; i < 2; i++) {
        oc[i] = connect_client(f[i]);
        ASSERT_RC(dlock_lock_new(oc[i], NAME, &ol[i]), DLOCK_OK);
        ASSERT_RC(dlock_lock_acquire(ol[i], 30000), DLOCK_OK);
    }
    ASSERT_RC(dlock_lock_try_acquire(a.rl, 0, 10000), DLOCK_OK); /* masters 2, 3, 4 */
    ASSERT_RC(dlock_lock_try_acquire(a.rl, 0, 10000), DLOCK_OK); /* reentrant */
    bool held = false;
    int64_t count = -1;
    ASSERT_RC(dlock_lock_is_held(a.rl, &held), DLOCK_OK);
    assert_true(held);
    ASSERT_RC(dlock_lock_hold_count(a.rl, &count), DLOCK_OK);
    printf("# held on masters 2..4, twice: hold_count %lld\n", (long long)count);
    ASSERT_RC(dlock_lock_release(a.rl), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(a.rl), DLOCK_OK);
    const bool ours[N] = {false, false, true, true, true};
    expect_members_gone(f, ours);
    for (int i = 0; i < 2; i++) {
        ASSERT_RC(dlock_lock_release(ol[i]), DLOCK_OK);
        dlock_lock_free(ol[i]);
        dlock_client_free(oc[i]);
    }
    masters_app_close(&a);
    masters_stop(f, N);
    assert_int_equal(count, 2);
}

/* ---- a paused master, a validity that runs out ------------------------------------------- */

static void test_one_paused_master_costs_at_most_the_answer_budget_not_the_wait(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f[N];
    masters_start(f, N);
    masters_app a;
    masters_app_open(&a, f, N, NAME, NULL, false);
    /* answer budget 1000 ms (lease / 10): room for a loaded machine's healthy masters */
    const int64_t lease = 10000, wait = TEST_SLOW_MS;
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_try_acquire(a.rl, wait, lease), DLOCK_OK);
    int64_t all_up = test_now_ms() - start;
    ASSERT_RC(dlock_lock_release(a.rl), DLOCK_OK);

    assert_int_equal(redis_fixture_pause(f[2]), 0);
    start = test_now_ms();
    ASSERT_RC(dlock_lock_try_acquire(a.rl, wait, lease), DLOCK_OK);
    int64_t one_paused = test_now_ms() - start;
    printf("# lease %lld ms: acquired in %lld ms with 5 up, %lld ms with 1 of 5 paused\n",
           (long long)lease, (long long)all_up, (long long)one_paused);
    /* the budget and some, far under the wait */
    ASSERT_BETWEEN(one_paused, 0, 1000 + test_prompt_ms());
    const bool running[N] = {true, true, false, true, true};
    expect_holds(f, &a, running, 1);
    assert_int_equal(redis_fixture_resume(f[2]), 0);
    /* the paused master ran the acquisition when resumed: it gives itself back */
    ASSERT_RC(dlock_lock_release(a.rl), DLOCK_OK);
    bool clear = false;
    POLL_UNTIL(clear, members_present(f, NULL) == 0, test_prompt_ms());
    assert_true(clear);
    masters_app_close(&a);
    masters_stop(f, N);
}

typedef struct timed_try {
    dlock_lock *rl;
    int64_t wait_ms, lease_ms;
    atomic_llong t0_ms; /* just before the call */
    int rc;
    char detail[256];
} timed_try;

static void *try_once(void *arg) {
    timed_try *t = arg;
    atomic_store(&t->t0_ms, test_now_ms());
    t->rc = dlock_lock_try_acquire(t->rl, t->wait_ms, t->lease_ms);
    snprintf(t->detail, sizeof(t->detail), "%s", dlock_last_error());
    if (t->rc == DLOCK_OK)
        dlock_lock_release(t->rl);
    return NULL;
}

static void
test_a_lock_whose_validity_ran_out_during_acquisition_is_never_reported_held(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f[N];
    masters_start(f, N);
    masters_app a;
    masters_app_open(&a, f, N, NAME, NULL, false);

    /* A lease no longer than the drift leaves no validity at all, however fast Redis is. */
    for (int i = 0; i < 50; i++) {
        int rc = dlock_lock_try_acquire(a.rl, 0, 2);
        if (rc == DLOCK_OK)
            fail_msg("a 2 ms lease (drift 2 ms) was reported held");
        ASSERT_RC(rc, DLOCK_ETIMEDOUT);
    }

    /* A lease shorter than the round trip: 20 ms (validity at most 18 ms), with 3 of the
     * masters paused until 30 ms after the call began. Their answers come within the
     * member answer budget (50 ms) and make a quorum, but too late. */
    const int64_t lease = 20, resume_at = 30;
    int late_quorum = 0;
    /* at least 5 rounds, and on until the case was met (a loaded machine may answer after
     * the budget instead), within a bound */
    for (int round = 0; round < 5 || (late_quorum == 0 && round < 30); round++) {
        for (int i = 0; i < 3; i++)
            assert_int_equal(redis_fixture_pause(f[i]), 0);
        timed_try t = {.rl = a.rl, .wait_ms = 0, .lease_ms = lease};
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, try_once, &t), 0);
        bool started = false;
        POLL_UNTIL(started, atomic_load(&t.t0_ms) != 0, slack_ms(2000));
        assert_true(started);
        int64_t left = atomic_load(&t.t0_ms) + resume_at - test_now_ms();
        test_sleep_ms(left);
        for (int i = 0; i < 3; i++)
            assert_int_equal(redis_fixture_resume(f[i]), 0);
        assert_int_equal(pthread_join(th, NULL), 0);
        if (t.rc == DLOCK_OK)
            fail_msg("round %d: held although the quorum answered %lld ms after the start of a "
                     "%lld ms lease",
                     round, (long long)resume_at, (long long)lease);
        ASSERT_RC(t.rc, DLOCK_ETIMEDOUT);
        int got = 0;
        long long validity = 0;
        if (parse_round(t.detail, &got, &validity) && got >= QUORUM && validity <= 0)
            late_quorum++;
        printf("# round %d: %s (%s)\n", round, dlock_err_name(t.rc), t.detail);
        bool clear = false;
        POLL_UNTIL(clear, members_present(f, NULL) == 0, test_prompt_ms());
        assert_true(clear);
    }
    /* the case was really met: a quorum that agreed after the validity was gone */
    if (!test_under_valgrind())
        assert_true(late_quorum >= 1);
    /* and a lease with room to spare still works */
    ASSERT_RC(dlock_lock_try_acquire(a.rl, 0, 5000), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(a.rl), DLOCK_OK);
    masters_app_close(&a);
    masters_stop(f, N);
}

/* ---- the members are asked at once ------------------------------------------------------ */

typedef struct proxied_try {
    dlock_lock *rl;
    atomic_int rc, release_rc;
    atomic_bool acquired; /* the acquire returned */
} proxied_try;

/* Acquire, then release (the owner is this thread). */
static void *try_through_proxies(void *arg) {
    proxied_try *t = arg;
    int rc = dlock_lock_try_acquire(t->rl, 0, 30000);
    atomic_store(&t->rc, rc);
    atomic_store(&t->acquired, true);
    atomic_store(&t->release_rc, rc == DLOCK_OK ? dlock_lock_release(t->rl) : rc);
    return NULL;
}

/* Masters asked and not yet answered, as the client sees it: the proxy forwarded a
 * request to the server since the baseline and has not delivered a byte back. */
static int asked_unanswered(fault_proxy *px[N], const fault_proxy_stats base[N]) {
    int n = 0;
    for (int i = 0; i < N; i++) {
        fault_proxy_stats now = fault_proxy_stats_get(px[i]);
        n += now.requests_up > base[i].requests_up && now.bytes_down == base[i].bytes_down;
    }
    return n;
}

/* Parallel, shown by what is on the wire rather than by a stopwatch: every master sits
 * behind a proxy that holds its replies 500 ms (a loaded machine sends the 5 requests within
 * that; half the 1 s answer budget is left for the replies), and at one moment during the acquire
 * all 5 requests have gone out while no reply has come back. Asked one after another, a member
 * would be asked only after the one before it answered: never more than 1 in flight. (The
 * latency is measured in bench/: dlock-bench's redlock_acquire.) */
static void test_the_5_members_are_asked_at_once_not_one_after_another(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f[N];
    masters_start(f, N);
    fault_proxy *px[N];
    masters_app a = {.n = N};
    for (int i = 0; i < N; i++) {
        assert_int_equal(fault_proxy_start(redis_fixture_unix_url(f[i]), &px[i]), 0);
        a.c[i] = connect_client_cfg(NULL, (test_client_cfg){.url = fault_proxy_url(px[i])});
        ASSERT_RC(dlock_lock_new(a.c[i], NAME, &a.member[i]), DLOCK_OK);
        ASSERT_RC(dlock_client_ping(a.c[i]), DLOCK_OK); /* connected, scripts loaded: idle */
    }
    ASSERT_RC(dlock_redlock_new(a.member, N, &a.rl), DLOCK_OK);
    fault_proxy_stats base[N];
    for (int i = 0; i < N; i++) {
        fault_proxy_delay_replies(px[i], 500);
        base[i] = fault_proxy_stats_get(px[i]);
    }
    proxied_try t = {.rl = a.rl};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, try_through_proxies, &t), 0);
    int most = 0;
    while (!atomic_load(&t.acquired)) {
        int n = asked_unanswered(px, base);
        if (n > most)
            most = n;
        test_sleep_ms(1);
    }
    assert_int_equal(pthread_join(th, NULL), 0);
    ASSERT_RC(atomic_load(&t.rc), DLOCK_OK); /* 500 ms is within the 1 s answer budget */
    printf("# masters asked and not yet answered at once during the acquire: %d of %d\n", most, N);
    assert_int_equal(most, N);
    ASSERT_RC(atomic_load(&t.release_rc), DLOCK_OK);

    /* the measure can tell: a MultiLock over the same members takes them one after
     * another, and never has more than one asked and unanswered */
    dlock_lock_free(a.rl);
    ASSERT_RC(dlock_multilock_new(a.member, N, &a.rl), DLOCK_OK);
    for (int i = 0; i < N; i++) {
        fault_proxy_delay_replies(px[i], 100);
        base[i] = fault_proxy_stats_get(px[i]);
    }
    proxied_try m = {.rl = a.rl};
    assert_int_equal(pthread_create(&th, NULL, try_through_proxies, &m), 0);
    int most_multi = 0;
    while (!atomic_load(&m.acquired)) {
        int n = asked_unanswered(px, base);
        if (n > most_multi)
            most_multi = n;
        test_sleep_ms(1);
    }
    assert_int_equal(pthread_join(th, NULL), 0);
    ASSERT_RC(atomic_load(&m.rc), DLOCK_OK);
    ASSERT_RC(atomic_load(&m.release_rc), DLOCK_OK);
    printf("# the same for a MultiLock (one member after another): %d\n", most_multi);
    assert_int_equal(most_multi, 1);
    masters_app_close(&a);
    for (int i = 0; i < N; i++)
        fault_proxy_stop(px[i]);
    assert_int_equal(members_present(f, NULL), 0);
    masters_stop(f, N);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_acquire_with_2_masters_stopped_succeeds_on_the_other_3),
        cmocka_unit_test(
            test_acquire_with_3_masters_stopped_fails_in_bounded_time_and_leaves_nothing_held),
        cmocka_unit_test(test_a_minority_taken_when_the_quorum_is_missed_is_given_back),
        cmocka_unit_test(test_hold_count_and_is_held_of_a_redlock_held_on_3_of_5_count_its_quorum),
        cmocka_unit_test(test_one_paused_master_costs_at_most_the_answer_budget_not_the_wait),
        cmocka_unit_test(
            test_a_lock_whose_validity_ran_out_during_acquisition_is_never_reported_held),
        cmocka_unit_test(test_the_5_members_are_asked_at_once_not_one_after_another),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
