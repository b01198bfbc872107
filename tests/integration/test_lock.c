/* SPDX-License-Identifier: MIT */
/* test_lock.c — the reentrant lock (RLock) and the fenced lock (RFencedLock) of
 * src/lock/lock.c, blocking face, against a real redis-server.
 *
 * What is proven: reentrant hold counts and ownership per thread and per client (two
 * handles of one name in one thread are one reentrant lock); the
 * try_acquire wait bounds; leases (TTL, explicit expiry, the watchdog keeping a lock for
 * several periods, a SIGKILLed holder process freeing it within its lease); the hand-off
 * to a waiter and that a waiter does not poll; the lost callback (key deleted, server
 * restarted empty, force-released by another client) and DLOCK_ELOST on the next release;
 * fencing tokens; the Redis layout of REDIS_LAYOUT.md read back with plain commands
 * (hash field, PTTL, token key, channel and its "0" message, names with a '{'); bad input
 * (DLOCK_EINVAL with no I/O, a key of another type, huge and binary-ish names); and that
 * the acquire and release scripts apply a resend once.
 *
 * This file keeps hold counts, ownership and the wait bounds; the rest is split by concern:
 * test_lock_leases.c (leases, a killed holder, hand-off, lost leases, force release),
 * test_lock_tokens.c (fencing tokens, resends), test_lock_layout.c (the layout, bad input);
 * their helpers are in tests/support/lock_helpers.h.
 *
 * Every test starts its own server. Records that a callback on the client's loop thread
 * writes live in static storage, so a failed assert leaves nothing dangling. */
#include "lock_helpers.h"

/* ---- hold counts and ownership ----------------------------------------------------------- */

static void
test_hold_count_goes_0_1_0_2_1_0_through_acquire_release_acquire_acquire_release_release(
    void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = new_lock(c, "counted");
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
    assert_int_equal(redis_fixture_int(f, "EXISTS counted"), 0);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

typedef struct other_thread_view {
    dlock_lock *l;
    int held_rc, count_rc, locked_rc, release_rc;
    bool held, locked;
    int64_t count;
} other_thread_view;

static void *look_from_other_thread(void *arg) {
    other_thread_view *v = arg;
    v->held_rc = dlock_lock_is_held(v->l, &v->held);
    v->count_rc = dlock_lock_hold_count(v->l, &v->count);
    v->locked_rc = dlock_lock_is_locked(v->l, &v->locked);
    return NULL;
}

static void test_is_held_from_another_thread_is_false_while_this_thread_holds(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = new_lock(c, "mine");
    ASSERT_RC(dlock_lock_acquire(l, DLOCK_WATCHDOG), DLOCK_OK);
    bool held = false, locked = false;
    ASSERT_RC(dlock_lock_is_held(l, &held), DLOCK_OK);
    ASSERT_RC(dlock_lock_is_locked(l, &locked), DLOCK_OK);
    assert_true(held);
    assert_true(locked);
    other_thread_view v = {.l = l, .held = true, .count = -1};
    on_other_thread(look_from_other_thread, &v);
    ASSERT_RC(v.held_rc, DLOCK_OK);
    ASSERT_RC(v.count_rc, DLOCK_OK);
    ASSERT_RC(v.locked_rc, DLOCK_OK);
    assert_false(v.held);
    assert_int_equal(v.count, 0);
    assert_true(v.locked); /* locked, just not by that thread */
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    ASSERT_RC(dlock_lock_is_held(l, &held), DLOCK_OK);
    ASSERT_RC(dlock_lock_is_locked(l, &locked), DLOCK_OK);
    assert_false(held);
    assert_false(locked);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void *release_from_other_thread(void *arg) {
    other_thread_view *v = arg;
    v->release_rc = dlock_lock_release(v->l);
    return NULL;
}

static void test_release_by_another_thread_is_enotowner_and_the_lock_stays_held(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = new_lock(c, "not-yours");
    ASSERT_RC(dlock_lock_acquire(l, 20000), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(l, 20000), DLOCK_OK);
    char before[512], after[512], field[128];
    hash_dump(f, "not-yours", before, sizeof(before));
    other_thread_view v = {.l = l};
    on_other_thread(release_from_other_thread, &v);
    ASSERT_RC(v.release_rc, DLOCK_ENOTOWNER);
    hash_dump(f, "not-yours", after, sizeof(after));
    assert_string_equal(after, before);
    owner_field(c, dlock_thread_owner(), field, sizeof(field));
    char want[512];
    snprintf(want, sizeof(want), "%s=2;", field);
    assert_string_equal(after, want);
    ASSERT_BETWEEN(pttl_of(f, "not-yours"), 1, 20000);
    /* the holder's own releases still work, twice */
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "EXISTS not-yours"), 0);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_release_by_another_client_is_enotowner_and_the_lock_stays_held(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_client *b = connect_client(f);
    dlock_lock *la = new_lock(a, "other-client");
    dlock_lock *lb = new_lock(b, "other-client");
    ASSERT_RC(dlock_lock_acquire(la, 20000), DLOCK_OK);
    char before[512], after[512];
    hash_dump(f, "other-client", before, sizeof(before));
    /* the same thread, so the same owner id: only the client id differs */
    ASSERT_RC(dlock_lock_release(lb), DLOCK_ENOTOWNER);
    hash_dump(f, "other-client", after, sizeof(after));
    assert_string_equal(after, before);
    bool held = true;
    ASSERT_RC(dlock_lock_is_held(lb, &held), DLOCK_OK);
    assert_false(held);
    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

static void test_two_handles_of_one_name_in_one_thread_are_one_reentrant_lock(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_client *other = connect_client(f);
    dlock_lock *first = new_lock(c, "two-handles");
    dlock_lock *second = new_lock(c, "two-handles");
    dlock_lock *theirs = new_lock(other, "two-handles");
    ASSERT_RC(dlock_lock_acquire(first, 20000), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(second, 20000), DLOCK_OK); /* a second hold, not a resend */
    int64_t count = 0;
    ASSERT_RC(dlock_lock_hold_count(first, &count), DLOCK_OK);
    assert_int_equal(count, 2);
    ASSERT_RC(dlock_lock_release(second), DLOCK_OK);
    /* one hold left: still locked against everybody else */
    ASSERT_RC(dlock_lock_try_acquire(theirs, 0, 20000), DLOCK_ETIMEDOUT);
    ASSERT_RC(dlock_lock_hold_count(second, &count), DLOCK_OK);
    assert_int_equal(count, 1);
    ASSERT_RC(dlock_lock_release(first), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "EXISTS two-handles"), 0);
    ASSERT_RC(dlock_lock_release(first), DLOCK_ENOTOWNER);
    dlock_lock_free(first);
    dlock_lock_free(second);
    dlock_lock_free(theirs);
    dlock_client_free(c);
    dlock_client_free(other);
    redis_fixture_stop(f);
}

/* ---- try_acquire wait bounds ------------------------------------------------------------- */

static void test_try_acquire_wait_0_on_a_held_lock_times_out_at_once(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_client *b = connect_client(f);
    dlock_lock *la = new_lock(a, "busy");
    dlock_lock *lb = new_lock(b, "busy");
    ASSERT_RC(dlock_lock_acquire(la, 30000), DLOCK_OK);
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_try_acquire(lb, 0, 30000), DLOCK_ETIMEDOUT);
    int64_t took = test_now_ms() - start;
    assert_true(strlen(dlock_last_error()) > 0);
    /* at once: a wait would last until a's 30 s lease runs out */
    ASSERT_BETWEEN(took, 0, test_prompt_ms());
    assert_int_equal(numsub(f, "redisson_lock__channel:{busy}"), 0); /* it never subscribed */
    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    /* free now: one attempt takes it */
    ASSERT_RC(dlock_lock_try_acquire(lb, 0, 30000), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(lb), DLOCK_OK);
    printf("# try_acquire(wait 0) on a held lock: %lld ms\n", (long long)took);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

static void test_try_acquire_wait_500_on_a_held_lock_times_out_after_450_to_1200_ms(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_client *b = connect_client(f);
    dlock_lock *la = new_lock(a, "busy-500");
    dlock_lock *lb = new_lock(b, "busy-500");
    ASSERT_RC(dlock_lock_acquire(la, 30000), DLOCK_OK);
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_try_acquire(lb, 500, 30000), DLOCK_ETIMEDOUT);
    int64_t took = test_now_ms() - start;
    ASSERT_BETWEEN(took, 450, slack_ms(1200));
    bool held = true;
    ASSERT_RC(dlock_lock_is_held(lb, &held), DLOCK_OK);
    assert_false(held);
    printf("# try_acquire(wait 500) on a held lock: %lld ms\n", (long long)took);
    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_hold_count_goes_0_1_0_2_1_0_through_acquire_release_acquire_acquire_release_release),
        cmocka_unit_test(test_is_held_from_another_thread_is_false_while_this_thread_holds),
        cmocka_unit_test(test_release_by_another_thread_is_enotowner_and_the_lock_stays_held),
        cmocka_unit_test(test_release_by_another_client_is_enotowner_and_the_lock_stays_held),
        cmocka_unit_test(test_two_handles_of_one_name_in_one_thread_are_one_reentrant_lock),
        cmocka_unit_test(test_try_acquire_wait_0_on_a_held_lock_times_out_at_once),
        cmocka_unit_test(test_try_acquire_wait_500_on_a_held_lock_times_out_after_450_to_1200_ms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
