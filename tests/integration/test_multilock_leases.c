/* SPDX-License-Identifier: MIT */
/* test_multilock_leases.c — the multilock tests of test_multilock.c, split from it by concern:
 * leases; lost members. Helpers: tests/support/multilock_helpers.h. Every test starts its own
 * server. */
#include "multilock_helpers.h"

/* ---- leases ------------------------------------------------------------------------------ */

static void test_a_lease_shorter_than_the_wait_for_the_last_member_does_not_expire_the_first_ones(
    void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    cluster cl;
    cluster_start(&cl, 900); /* the members are watchdog-held while the others are taken */
    int last = member_taken_last(&cl);
    dlock_client *other = connect_client(cl.f[last]);
    dlock_lock *busy = new_lock(other, member_names[last]);
    dlock_lock *members[NSERVERS];
    new_members(&cl, members);
    dlock_lock *m = new_multilock(members, NSERVERS);
    const int64_t lease = 300, busy_for = 1000;
    holder_thread h = {.l = busy, .lease_ms = 30000, .hold_ms = busy_for};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, hold_then_release, &h), 0);
    bool holding = false;
    POLL_UNTIL(holding, atomic_load(&h.holding), slack_ms(5000));
    assert_true(holding);
    ASSERT_RC(h.acquire_rc, DLOCK_OK);
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_try_acquire(m, slack_ms(5000), lease), DLOCK_OK);
    int64_t took = test_now_ms() - start;
    assert_int_equal(pthread_join(t, NULL), 0);
    ASSERT_RC(h.release_rc, DLOCK_OK);
    assert_true(took >= busy_for - 100); /* the others were held about 3 leases meanwhile */
    /* every member, the first ones too, is ours with the caller's lease from now */
    for (int i = 0; i < NSERVERS; i++) {
        assert_int_equal(holds_on(cl.f[i], cl.c[i], member_names[i]), 1);
        ASSERT_BETWEEN(pttl_of(cl.f[i], member_names[i]), 1, lease);
    }
    ASSERT_RC(dlock_lock_release(m), DLOCK_OK);
    assert_int_equal(members_present(&cl), 0);
    printf("# lease %lld ms, last member (%d) free after %lld ms: all held, all PTTL <= lease\n",
           (long long)lease, last, (long long)took);
    dlock_lock_free(m);
    free_locks(members, NSERVERS);
    dlock_lock_free(busy);
    ASSERT_RC(dlock_client_free(other), DLOCK_OK);
    cluster_stop(&cl);
}

static void test_an_explicit_lease_is_not_renewed_and_every_member_expires_with_it(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    cluster cl;
    cluster_start(&cl, 300); /* a watchdog period far shorter than the lease */
    dlock_lock *members[NSERVERS];
    new_members(&cl, members);
    dlock_lock *m = new_multilock(members, NSERVERS);
    const int64_t lease = 800;
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_acquire(m, lease), DLOCK_OK);
    for (int i = 0; i < NSERVERS; i++)
        ASSERT_BETWEEN(pttl_of(cl.f[i], member_names[i]), 1, lease);
    /* the PTTLs only go down, and the keys vanish when the lease runs out */
    long long prev[NSERVERS] = {lease, lease, lease};
    while (members_present(&cl) > 0) {
        for (int i = 0; i < NSERVERS; i++) {
            long long p = pttl_of(cl.f[i], member_names[i]);
            if (p > 0) {
                if (p > prev[i])
                    fail_msg("member %d renewed: PTTL %lld after %lld", i, p, prev[i]);
                prev[i] = p;
            }
        }
        if (test_now_ms() - start > lease + slack_ms(500))
            fail_msg("members still present %lld ms after a %lld ms lease",
                     (long long)(test_now_ms() - start), (long long)lease);
        test_sleep_ms(20);
    }
    int64_t gone = test_now_ms() - start;
    assert_true(gone >= lease - 50);
    ASSERT_RC(dlock_lock_release(m), DLOCK_ELOST);
    printf("# lease %lld ms: every member gone after %lld ms, release ELOST\n", (long long)lease,
           (long long)gone);
    dlock_lock_free(m);
    free_locks(members, NSERVERS);
    cluster_stop(&cl);
}

static void
test_the_watchdog_through_the_composite_keeps_every_member_past_four_leases(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    const int64_t watchdog_ms = 800;
    cluster cl;
    cluster_start(&cl, watchdog_ms);
    dlock_client *others[NSERVERS];
    dlock_lock *theirs[NSERVERS];
    for (int i = 0; i < NSERVERS; i++) {
        others[i] = connect_client(cl.f[i]);
        theirs[i] = new_lock(others[i], member_names[i]);
    }
    dlock_lock *members[NSERVERS];
    new_members(&cl, members);
    dlock_lock *m = new_multilock(members, NSERVERS);
    ASSERT_RC(dlock_lock_acquire(m, DLOCK_WATCHDOG), DLOCK_OK);
    int64_t start = test_now_ms();
    long long lowest = watchdog_ms;
    int checks = 0;
    while (test_now_ms() - start < 4 * watchdog_ms + 200) {
        for (int i = 0; i < NSERVERS; i++) {
            long long p = pttl_of(cl.f[i], member_names[i]);
            ASSERT_BETWEEN(p, 1, watchdog_ms);
            if (p < lowest)
                lowest = p;
            ASSERT_RC(dlock_lock_try_acquire(theirs[i], 0, 1000), DLOCK_ETIMEDOUT);
        }
        checks++;
        test_sleep_ms(100);
    }
    bool held = false;
    ASSERT_RC(dlock_lock_is_held(m, &held), DLOCK_OK);
    assert_true(held);
    ASSERT_RC(dlock_lock_release(m), DLOCK_OK);
    assert_int_equal(members_present(&cl), 0);
    printf("# watchdog %lld ms: held %lld ms, %d checks, lowest member PTTL %lld ms\n",
           (long long)watchdog_ms, (long long)(test_now_ms() - start), checks, lowest);
    dlock_lock_free(m);
    free_locks(members, NSERVERS);
    free_locks(theirs, NSERVERS);
    for (int i = 0; i < NSERVERS; i++)
        ASSERT_RC(dlock_client_free(others[i]), DLOCK_OK);
    cluster_stop(&cl);
}

/* ---- lost members, failing members ------------------------------------------------------- */

static void test_members_deleted_behind_the_holder_make_the_composite_lost_once_and_release_elost(
    void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    lost_reset();
    cluster cl;
    cluster_start(&cl, 600);
    dlock_lock *members[NSERVERS];
    new_members(&cl, members);
    dlock_lock *m = new_multilock(members, NSERVERS);
    int tag = 0;
    ASSERT_RC(dlock_lock_on_lost(m, record_lost, &tag), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(m, DLOCK_WATCHDOG), DLOCK_OK);
    assert_int_equal(redis_fixture_int(cl.f[1], "DEL %s", member_names[1]), 1);
    assert_int_equal(redis_fixture_int(cl.f[2], "DEL %s", member_names[2]), 1);
    bool fired = false;
    POLL_UNTIL(fired, lost_calls() >= 1, slack_ms(3000));
    assert_true(fired);
    test_sleep_ms(600); /* another watchdog period: a second member lost fires nothing more */
    lost_record lost = lost_get();
    int calls = lost.calls;
    dlock_lock *which = lost.lock;
    uint64_t owner = lost.owner;
    int reason = lost.reason;
    void *arg = lost.arg;
    assert_int_equal(calls, 1);
    assert_ptr_equal(which, m);
    assert_true(owner == dlock_thread_owner());
    ASSERT_RC(reason, DLOCK_ELOST);
    assert_ptr_equal(arg, &tag);
    /* the one member still held is still renewed; release frees it and says ELOST */
    ASSERT_BETWEEN(pttl_of(cl.f[0], member_names[0]), 1, 600);
    ASSERT_RC(dlock_lock_release(m), DLOCK_ELOST);
    assert_int_equal(members_present(&cl), 0);
    ASSERT_RC(dlock_lock_release(m), DLOCK_ENOTOWNER);
    /* taken again afterwards, it is not lost */
    ASSERT_RC(dlock_lock_acquire(m, 10000), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(m), DLOCK_OK);
    assert_int_equal(lost_calls(), 1);
    dlock_lock_free(m);
    free_locks(members, NSERVERS);
    cluster_stop(&cl);
}

static void
test_release_continues_past_a_member_whose_server_is_down_and_reports_its_error(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    cluster cl;
    memset(&cl, 0, sizeof(cl));
    for (int i = 0; i < NSERVERS; i++)
        assert_int_equal(redis_fixture_start(NULL, &cl.f[i]), 0);
    /* commands give up after 300 ms x 2 attempts */
    for (int i = 0; i < NSERVERS; i++)
        cl.c[i] =
            connect_client_cfg(cl.f[i], (test_client_cfg){.timeout_ms = 300, .retry_attempts = 1});
    dlock_lock *members[NSERVERS];
    new_members(&cl, members);
    dlock_lock *m = new_multilock(members, NSERVERS);
    ASSERT_RC(dlock_lock_acquire(m, 30000), DLOCK_OK);
    assert_int_equal(redis_fixture_kill(cl.f[1]), 0);
    int64_t start = test_now_ms();
    int rc = dlock_lock_release(m);
    int64_t took = test_now_ms() - start;
    if (rc == DLOCK_OK)
        fail_msg("release with a member's server down = DLOCK_OK");
    printf("# release with server 1 down: %s (%s) after %lld ms\n", dlock_err_name(rc),
           dlock_last_error(), (long long)took);
    ASSERT_BETWEEN(took, 0, slack_ms(3000));
    assert_int_equal(exists(cl.f[0], member_names[0]), 0);
    assert_int_equal(exists(cl.f[2], member_names[2]), 0);
    dlock_lock_free(m);
    free_locks(members, NSERVERS);
    cluster_stop(&cl);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_a_lease_shorter_than_the_wait_for_the_last_member_does_not_expire_the_first_ones),
        cmocka_unit_test(test_an_explicit_lease_is_not_renewed_and_every_member_expires_with_it),
        cmocka_unit_test(
            test_the_watchdog_through_the_composite_keeps_every_member_past_four_leases),
        cmocka_unit_test(
            test_members_deleted_behind_the_holder_make_the_composite_lost_once_and_release_elost),
        cmocka_unit_test(
            test_release_continues_past_a_member_whose_server_is_down_and_reports_its_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
