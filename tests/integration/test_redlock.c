/* SPDX-License-Identifier: MIT */
/* test_redlock.c — the RedLock of src/multilock/multilock.c (dlock_redlock_new), blocking
 * face, against five real redis-servers, one client (or one per process) on each: the
 * members are locks of one name, "rl", on five independent masters.
 *
 * What is proven: with 5 masters up acquire takes every member and release frees them;
 * with 2 stopped it still succeeds on the other 3, quickly; with 3 stopped it fails in a
 * bounded time (the per-member answer budget, not the clients' command give-up) and leaves
 * nothing held on the 2 live ones; a minority taken when the quorum is missed is given
 * back; two RedLocks on the same names exclude each other; one paused master costs at most
 * the answer budget, not the wait, and its late acquisition gives itself back; a lock
 * whose validity ran out while it was being acquired is never reported held (a lease
 * shorter than the round trip never succeeds); ttl is the remaining validity (lease less
 * the drift); the watchdog extends every member and the composite is lost only when fewer
 * than a quorum remain; reentrant holds taken on different quorums are all given back;
 * fenced members: the token is the largest token of the granting majority, tokens of
 * successive holders rise when their majorities differ, and a RedLock mixing fenced and
 * plain members is refused; ownership per thread; the mutual-exclusion checker across four
 * processes on fenced members while the masters are paused one after another (no overlap,
 * exact count, every holder's token above the previous holder's); the 5 members are asked
 * at once (all 5 requests on the wire before any reply, behind proxies that hold replies).
 * The acquire latency is measured in bench/ (dlock-bench redlock_acquire).
 *
 * Every test starts its own servers. Records that a callback on a client's loop thread
 * writes live in static storage. Handles are freed composite first, then members, then
 * clients. *
 * This file keeps all masters up, two applications, the watchdog and reentrant holds; the
 * rest is split by concern: test_redlock_faults.c (stopped and paused masters, the parallel
 * asking), test_redlock_tokens.c (fencing tokens), test_redlock_checker.c (the checker across
 * processes, alone in its program so that no earlier failed test's memory is inherited by
 * its forked children); helpers: tests/support/redlock_helpers.h.
 */
#include "redlock_helpers.h"

/* ---- all masters up ---------------------------------------------------------------------- */

static void test_acquire_with_5_masters_up_takes_every_member_and_release_frees_them(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f[N];
    masters_start(f, N);
    masters_app a;
    masters_app_open(&a, f, N, NAME, NULL, false);
    bool flag = true;
    int64_t v = 0;
    ASSERT_RC(dlock_lock_is_locked(a.rl, &flag), DLOCK_OK);
    assert_false(flag);
    ASSERT_RC(dlock_lock_ttl(a.rl, &v), DLOCK_OK);
    assert_int_equal(v, -2);
    ASSERT_RC(dlock_lock_try_acquire(a.rl, 0, 20000), DLOCK_OK);
    expect_holds(f, &a, NULL, 1);
    for (int i = 0; i < N; i++)
        ASSERT_BETWEEN(redis_fixture_int(f[i], "PTTL " NAME), 15000, 20000);
    ASSERT_RC(dlock_lock_is_locked(a.rl, &flag), DLOCK_OK);
    assert_true(flag);
    ASSERT_RC(dlock_lock_is_held(a.rl, &flag), DLOCK_OK);
    assert_true(flag);
    ASSERT_RC(dlock_lock_hold_count(a.rl, &v), DLOCK_OK);
    assert_int_equal(v, 1);
    ASSERT_RC(dlock_lock_release(a.rl), DLOCK_OK);
    expect_members_gone(f, NULL);
    ASSERT_RC(dlock_lock_is_held(a.rl, &flag), DLOCK_OK);
    assert_false(flag);
    ASSERT_RC(dlock_lock_ttl(a.rl, &v), DLOCK_OK);
    assert_int_equal(v, -2);
    ASSERT_RC(dlock_lock_release(a.rl), DLOCK_ENOTOWNER);
    assert_string_equal(dlock_lock_name(a.rl), "redlock(" NAME ",...)");
    masters_app_close(&a);
    masters_stop(f, N);
}

/* Acquires with lease on members whose clients have watchdog_ms, and checks the ttl right
 * after: at most lease - drift(lease), less only by the time the acquire and ttl took. */
static bool validity_after_acquire_is_right(int64_t watchdog_ms, int64_t lease) {
    redis_fixture *f[N];
    masters_start(f, N);
    masters_app a;
    test_client_cfg cfg = {.watchdog_ms = watchdog_ms};
    masters_app_open(&a, f, N, NAME, &cfg, false);
    int64_t ttl = 0;
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_acquire(a.rl, lease), DLOCK_OK);
    ASSERT_RC(dlock_lock_ttl(a.rl, &ttl), DLOCK_OK);
    int64_t since = test_now_ms() - start;
    printf("# watchdog_ms %lld, lease %lld ms: ttl %lld ms, %lld ms after the start of acquire "
           "(drift %lld: expected %lld..%lld)\n",
           (long long)watchdog_ms, (long long)lease, (long long)ttl, (long long)since,
           (long long)drift_of(lease), (long long)(lease - drift_of(lease) - since - 50),
           (long long)(lease - drift_of(lease)));
    ASSERT_RC(dlock_lock_release(a.rl), DLOCK_OK);
    masters_app_close(&a);
    masters_stop(f, N);
    return ttl >= lease - drift_of(lease) - since - slack_ms(50) && ttl <= lease - drift_of(lease);
}

static void test_ttl_is_the_remaining_validity_the_lease_less_the_clock_drift(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    /* the drift is the acquisition's lease's, whatever the clients' watchdog_ms */
    bool short_lease = validity_after_acquire_is_right(30000, 1000);
    bool short_watchdog = validity_after_acquire_is_right(1500, 10000);
    assert_true(short_lease);
    assert_true(short_watchdog);
}

/* ---- two applications -------------------------------------------------------------------- */

static void test_two_redlocks_on_the_same_names_exclude_each_other(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f[N];
    masters_start(f, N);
    masters_app a, b;
    masters_app_open(&a, f, N, NAME, NULL, false);
    masters_app_open(&b, f, N, NAME, NULL, false);
    ASSERT_RC(dlock_lock_acquire(a.rl, 30000), DLOCK_OK);
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_try_acquire(b.rl, 300, 30000), DLOCK_ETIMEDOUT);
    /* at its deadline: a's 30 s lease is no hint that ends it sooner */
    ASSERT_BETWEEN(test_now_ms() - start, 250, 300 + test_prompt_ms());
    bool flag = false;
    ASSERT_RC(dlock_lock_is_locked(b.rl, &flag), DLOCK_OK);
    assert_true(flag);
    ASSERT_RC(dlock_lock_is_held(b.rl, &flag), DLOCK_OK);
    assert_false(flag);
    /* a holds a quorum (a member a had not reached yet may have said yes to b first); b
     * gives back whatever it took */
    bool settled = false;
    int a_holds = 0, b_holds = 0;
    int64_t until = test_now_ms() + slack_ms(2000);
    do {
        a_holds = b_holds = 0;
        for (int i = 0; i < N; i++) {
            a_holds += holds_on(f[i], a.c[i]) == 1;
            b_holds += holds_on(f[i], b.c[i]) != 0;
        }
        settled = a_holds >= QUORUM && b_holds == 0;
        if (!settled)
            test_sleep_ms(5);
    } while (!settled && test_now_ms() < until);
    if (!settled)
        fail_msg("a holds %d of %d members, b %d (expected >= %d and 0)", a_holds, N, b_holds,
                 QUORUM);
    ASSERT_RC(dlock_lock_release(a.rl), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(b.rl, 0, 30000), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(a.rl, 0, 30000), DLOCK_ETIMEDOUT);
    ASSERT_RC(dlock_lock_release(b.rl), DLOCK_OK);
    expect_members_gone(f, NULL);
    masters_app_close(&b);
    masters_app_close(&a);
    masters_stop(f, N);
}

typedef struct other_view {
    dlock_lock *rl;
    int release_rc, held_rc, try_rc;
    bool held;
} other_view;

static void *release_and_try_from_other_thread(void *arg) {
    other_view *v = arg;
    v->release_rc = dlock_lock_release(v->rl);
    v->held_rc = dlock_lock_is_held(v->rl, &v->held);
    v->try_rc = dlock_lock_try_acquire(v->rl, 0, 5000);
    return NULL;
}

static void test_another_thread_cannot_release_or_take_it(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f[N];
    masters_start(f, N);
    masters_app a;
    masters_app_open(&a, f, N, NAME, NULL, false);
    ASSERT_RC(dlock_lock_acquire(a.rl, 20000), DLOCK_OK);
    other_view v = {.rl = a.rl, .held = true};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, release_and_try_from_other_thread, &v), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    ASSERT_RC(v.release_rc, DLOCK_ENOTOWNER);
    ASSERT_RC(v.held_rc, DLOCK_OK);
    assert_false(v.held);
    ASSERT_RC(v.try_rc, DLOCK_ETIMEDOUT);
    expect_holds(f, &a, NULL, 1);
    for (int i = 0; i < N; i++)
        assert_int_equal(redis_fixture_int(f[i], "HLEN " NAME), 1);
    ASSERT_RC(dlock_lock_release(a.rl), DLOCK_OK);
    expect_members_gone(f, NULL);
    masters_app_close(&a);
    masters_stop(f, N);
}

/* ---- the watchdog and the lost signal ---------------------------------------------------- */

static void
test_the_watchdog_extends_every_member_and_the_composite_is_lost_only_below_a_quorum(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    lost_reset();
    /* renewals every watchdog_ms / 3 must come in time on a loaded machine too (and on
     * valgrind, which is slower still) */
    const int64_t watchdog_ms = slack_ms(900) > TEST_WATCHDOG_MS ? slack_ms(900) : TEST_WATCHDOG_MS;
    redis_fixture *f[N];
    masters_start(f, N);
    masters_app a;
    test_client_cfg cfg = {.watchdog_ms = watchdog_ms};
    masters_app_open(&a, f, N, NAME, &cfg, false);
    ASSERT_RC(dlock_lock_on_lost(a.rl, record_lost, NULL), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(a.rl, DLOCK_WATCHDOG), DLOCK_OK);
    expect_holds(f, &a, NULL, 1); /* the members after the quorum too */
    int64_t start = test_now_ms();
    while (test_now_ms() - start < 2 * watchdog_ms + 200) {
        for (int i = 0; i < N; i++)
            ASSERT_BETWEEN(redis_fixture_int(f[i], "PTTL " NAME), 1, watchdog_ms);
        test_sleep_ms(100);
    }
    int64_t ttl = 0;
    ASSERT_RC(dlock_lock_ttl(a.rl, &ttl), DLOCK_OK);
    ASSERT_BETWEEN(ttl, 1, watchdog_ms);
    /* two members lost: 3 remain, a quorum; the composite is not lost */
    assert_int_equal(redis_fixture_int(f[0], "DEL " NAME), 1);
    assert_int_equal(redis_fixture_int(f[1], "DEL " NAME), 1);
    test_sleep_ms(2 * watchdog_ms);
    assert_int_equal(lost_calls(), 0);
    bool held = false;
    ASSERT_RC(dlock_lock_is_held(a.rl, &held), DLOCK_OK);
    assert_true(held);
    for (int i = 2; i < N; i++)
        ASSERT_BETWEEN(redis_fixture_int(f[i], "PTTL " NAME), 1, watchdog_ms);
    /* a third: fewer than a quorum; lost, once */
    assert_int_equal(redis_fixture_int(f[2], "DEL " NAME), 1);
    bool fired = false;
    POLL_UNTIL(fired, lost_calls() >= 1, watchdog_ms + test_prompt_ms());
    assert_true(fired);
    lost_record lost = lost_get();
    dlock_lock *which = lost.lock;
    uint64_t owner = lost.owner;
    int reason = lost.reason;
    assert_ptr_equal(which, a.rl);
    assert_true(owner == dlock_thread_owner());
    ASSERT_RC(reason, DLOCK_ELOST);
    ASSERT_RC(dlock_lock_is_held(a.rl, &held), DLOCK_OK);
    assert_false(held);
    /* release says so, and still frees the 2 members left */
    ASSERT_RC(dlock_lock_release(a.rl), DLOCK_ELOST);
    expect_members_gone(f, NULL);
    assert_int_equal(lost_calls(), 1);
    masters_app_close(&a);
    masters_stop(f, N);
}

/* ---- reentrant holds --------------------------------------------------------------------- */

static void test_reentrant_holds_taken_on_different_quorums_are_all_given_back(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f[N];
    masters_start(f, N);
    masters_app a;
    masters_app_open(&a, f, N, NAME, NULL, false);
    ASSERT_RC(dlock_lock_acquire(a.rl, 30000), DLOCK_OK); /* all 5 */
    /* the second hold is taken while master 4 is paused: on masters 0..3 only */
    assert_int_equal(redis_fixture_pause(f[4]), 0);
    ASSERT_RC(dlock_lock_try_acquire(a.rl, 0, 30000), DLOCK_OK);
    assert_int_equal(redis_fixture_resume(f[4]), 0);
    /* (master 4 runs the second acquisition on resume; that late hold gives itself back) */
    ASSERT_RC(dlock_lock_release(a.rl), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(a.rl), DLOCK_OK);
    bool clear = false;
    POLL_UNTIL(clear, members_present(f, NULL) == 0, test_prompt_ms());
    char held[64] = "";
    for (int i = 0; i < N; i++)
        if (exists_on(f[i]))
            snprintf(held + strlen(held), sizeof(held) - strlen(held), " %d(holds %lld)", i,
                     holds_on(f[i], a.c[i]));
    masters_app_close(&a); /* before failing: a later test forks, and children inherit leaks */
    masters_stop(f, N);
    if (!clear)
        fail_msg("after 2 acquires and 2 releases still held on master(s)%s", held);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_acquire_with_5_masters_up_takes_every_member_and_release_frees_them),
        cmocka_unit_test(test_ttl_is_the_remaining_validity_the_lease_less_the_clock_drift),
        cmocka_unit_test(test_two_redlocks_on_the_same_names_exclude_each_other),
        cmocka_unit_test(test_another_thread_cannot_release_or_take_it),
        cmocka_unit_test(
            test_the_watchdog_extends_every_member_and_the_composite_is_lost_only_below_a_quorum),
        cmocka_unit_test(test_reentrant_holds_taken_on_different_quorums_are_all_given_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
