/* SPDX-License-Identifier: MIT */
/* test_multilock.c — the MultiLock of src/multilock/multilock.c (dlock_multilock_new),
 * blocking face, against three real redis-servers (one client each).
 *
 * What is proven (here and in the files split from it): acquire takes every member for the calling
 * thread (read back on each server: the owner's field and the lease) and release frees every one;
 * reentrant holds count on every member; all or nothing (a member held elsewhere makes try_acquire
 * time out after its wait with no member left held, whichever member it is); a member freed later
 * is waited for with the wait shared across members; a lease shorter than the wait for the last
 * member does not let the first ones expire meanwhile, and then every member has the caller's
 * lease, not renewed; the watchdog through the composite keeps every member past several leases; a
 * member lost (deleted behind the holder's back) makes the composite lost once, and release then
 * says DLOCK_ELOST and still frees the others; release continues past a member whose server is down
 * and reports its error; ownership per thread; two threads taking overlapping MultiLocks given in
 * opposite orders never deadlock, with the members' handles on shared clients and on clients of
 * their own; force_release; the token of fenced members; bad input.
 *
 * Every test starts its own servers. Records that a callback on a client's loop thread
 * writes live in static storage, so a failed assert leaves nothing dangling. Handles are
 * freed composite first, then members, then clients.
 *
 * Split by concern: acquire and release, all or nothing, ownership, tokens and bad input here;
 * leases and lost or failing members in test_multilock_leases.c, two threads in opposite
 * orders in test_multilock_threads.c. Helpers: tests/support/multilock_helpers.h.
 */
#include "multilock_helpers.h"

/* ---- acquire and release ----------------------------------------------------------------- */

static void
test_acquire_takes_every_member_for_this_thread_and_release_frees_them_all(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    cluster cl;
    cluster_start(&cl, 0);
    /* four members: one on each server, and a second one on server 0 */
    dlock_lock *members[4];
    new_members(&cl, members);
    members[3] = new_lock(cl.c[0], "ml:d");
    dlock_lock *m = new_multilock(members, 4);
    bool flag = true;
    int64_t v = -5;
    ASSERT_RC(dlock_lock_is_locked(m, &flag), DLOCK_OK);
    assert_false(flag);
    ASSERT_RC(dlock_lock_ttl(m, &v), DLOCK_OK);
    assert_int_equal(v, -2);

    ASSERT_RC(dlock_lock_acquire(m, 20000), DLOCK_OK);
    for (int i = 0; i < NSERVERS; i++) {
        assert_int_equal(holds_on(cl.f[i], cl.c[i], member_names[i]), 1);
        ASSERT_BETWEEN(pttl_of(cl.f[i], member_names[i]), 15000, 20000);
    }
    assert_int_equal(holds_on(cl.f[0], cl.c[0], "ml:d"), 1);
    ASSERT_BETWEEN(pttl_of(cl.f[0], "ml:d"), 15000, 20000);
    ASSERT_RC(dlock_lock_is_locked(m, &flag), DLOCK_OK);
    assert_true(flag);
    ASSERT_RC(dlock_lock_is_held(m, &flag), DLOCK_OK);
    assert_true(flag);
    ASSERT_RC(dlock_lock_hold_count(m, &v), DLOCK_OK);
    assert_int_equal(v, 1);
    ASSERT_RC(dlock_lock_ttl(m, &v), DLOCK_OK);
    ASSERT_BETWEEN(v, 15000, 20000);
    for (int i = 0; i < 4; i++) { /* each member answers for itself the same */
        ASSERT_RC(dlock_lock_is_held(members[i], &flag), DLOCK_OK);
        assert_true(flag);
    }

    ASSERT_RC(dlock_lock_release(m), DLOCK_OK);
    assert_int_equal(members_present(&cl), 0);
    assert_int_equal(exists(cl.f[0], "ml:d"), 0);
    ASSERT_RC(dlock_lock_is_locked(m, &flag), DLOCK_OK);
    assert_false(flag);
    ASSERT_RC(dlock_lock_is_held(m, &flag), DLOCK_OK);
    assert_false(flag);
    ASSERT_RC(dlock_lock_ttl(m, &v), DLOCK_OK);
    assert_int_equal(v, -2);
    ASSERT_RC(dlock_lock_release(m), DLOCK_ENOTOWNER);
    assert_string_equal(dlock_lock_name(m), "multilock(ml:a,...)");

    dlock_lock_free(m);
    free_locks(members, 4);
    cluster_stop(&cl);
}

static void
test_reentrant_acquire_counts_two_holds_on_every_member_and_needs_two_releases(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    cluster cl;
    cluster_start(&cl, 0);
    dlock_lock *members[NSERVERS];
    new_members(&cl, members);
    dlock_lock *m = new_multilock(members, NSERVERS);
    int64_t count = -1;
    ASSERT_RC(dlock_lock_acquire(m, 20000), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(m, 0, DLOCK_WATCHDOG), DLOCK_OK);
    ASSERT_RC(dlock_lock_hold_count(m, &count), DLOCK_OK);
    assert_int_equal(count, 2);
    for (int i = 0; i < NSERVERS; i++)
        assert_int_equal(holds_on(cl.f[i], cl.c[i], member_names[i]), 2);
    ASSERT_RC(dlock_lock_release(m), DLOCK_OK);
    ASSERT_RC(dlock_lock_hold_count(m, &count), DLOCK_OK);
    assert_int_equal(count, 1);
    for (int i = 0; i < NSERVERS; i++)
        assert_int_equal(holds_on(cl.f[i], cl.c[i], member_names[i]), 1);
    ASSERT_RC(dlock_lock_release(m), DLOCK_OK);
    assert_int_equal(members_present(&cl), 0);
    ASSERT_RC(dlock_lock_hold_count(m, &count), DLOCK_OK);
    assert_int_equal(count, 0);
    dlock_lock_free(m);
    free_locks(members, NSERVERS);
    cluster_stop(&cl);
}

/* ---- all or nothing ---------------------------------------------------------------------- */

static void
test_a_member_held_elsewhere_times_out_after_the_wait_and_leaves_no_member_held(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    cluster cl;
    cluster_start(&cl, 0);
    dlock_client *other = connect_client(cl.f[0]); /* for a second client per server */
    dlock_client *others[NSERVERS] = {other, connect_client(cl.f[1]), connect_client(cl.f[2])};
    dlock_lock *members[NSERVERS];
    new_members(&cl, members);
    dlock_lock *m = new_multilock(members, NSERVERS);
    /* each member in turn is the one held elsewhere: first, middle and last in the order */
    for (int busy = 0; busy < NSERVERS; busy++) {
        dlock_lock *holder = new_lock(others[busy], member_names[busy]);
        ASSERT_RC(dlock_lock_acquire(holder, 30000), DLOCK_OK);
        int64_t start = test_now_ms();
        ASSERT_RC(dlock_lock_try_acquire(m, 500, 10000), DLOCK_ETIMEDOUT);
        int64_t took = test_now_ms() - start;
        ASSERT_BETWEEN(took, 450, slack_ms(1200));
        /* nothing of ours anywhere; the other holder's hold untouched */
        for (int i = 0; i < NSERVERS; i++) {
            assert_int_equal(holds_on(cl.f[i], cl.c[i], member_names[i]), 0);
            assert_int_equal(exists(cl.f[i], member_names[i]), i == busy ? 1 : 0);
        }
        bool flag = true;
        ASSERT_RC(dlock_lock_is_held(m, &flag), DLOCK_OK);
        assert_false(flag);
        ASSERT_RC(dlock_lock_is_locked(m, &flag), DLOCK_OK);
        assert_false(flag); /* not every member is locked */
        ASSERT_RC(dlock_lock_release(m), DLOCK_ENOTOWNER);
        ASSERT_RC(dlock_lock_release(holder), DLOCK_OK);
        dlock_lock_free(holder);
        printf("# member %d held elsewhere: ETIMEDOUT after %lld ms (wait 500)\n", busy,
               (long long)took);
    }
    /* and with every member free again it is had at once */
    ASSERT_RC(dlock_lock_try_acquire(m, 0, 10000), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(m), DLOCK_OK);
    dlock_lock_free(m);
    free_locks(members, NSERVERS);
    for (int i = 0; i < NSERVERS; i++)
        ASSERT_RC(dlock_client_free(others[i]), DLOCK_OK);
    cluster_stop(&cl);
}

static void test_waiting_for_a_member_freed_later_gets_every_member_once_it_is_freed(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    cluster cl;
    cluster_start(&cl, 0);
    dlock_client *other = connect_client(cl.f[1]);
    dlock_lock *busy = new_lock(other, member_names[1]);
    dlock_lock *members[NSERVERS];
    new_members(&cl, members);
    dlock_lock *m = new_multilock(members, NSERVERS);
    holder_thread h = {.l = busy, .lease_ms = 30000, .hold_ms = 400};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, hold_then_release, &h), 0);
    bool holding = false;
    POLL_UNTIL(holding, atomic_load(&h.holding), slack_ms(5000));
    assert_true(holding);
    ASSERT_RC(h.acquire_rc, DLOCK_OK);
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_try_acquire(m, slack_ms(5000), 20000), DLOCK_OK);
    int64_t got_ms = test_now_ms();
    assert_int_equal(pthread_join(t, NULL), 0);
    ASSERT_RC(h.release_rc, DLOCK_OK);
    /* had only after the member was freed, and soon after */
    assert_true(got_ms >= h.released_ms);
    ASSERT_BETWEEN(got_ms - h.released_ms, 0, slack_ms(300));
    for (int i = 0; i < NSERVERS; i++) {
        assert_int_equal(holds_on(cl.f[i], cl.c[i], member_names[i]), 1);
        ASSERT_BETWEEN(pttl_of(cl.f[i], member_names[i]), 1, 20000);
    }
    ASSERT_RC(dlock_lock_release(m), DLOCK_OK);
    assert_int_equal(members_present(&cl), 0);
    printf("# waited %lld ms; had it %lld ms after the busy member was freed\n",
           (long long)(got_ms - start), (long long)(got_ms - h.released_ms));
    dlock_lock_free(m);
    free_locks(members, NSERVERS);
    dlock_lock_free(busy);
    ASSERT_RC(dlock_client_free(other), DLOCK_OK);
    cluster_stop(&cl);
}

/* ---- ownership --------------------------------------------------------------------------- */

typedef struct other_view {
    dlock_lock *m;
    int release_rc, held_rc, try_rc;
    bool held;
} other_view;

static void *release_and_try_from_other_thread(void *arg) {
    other_view *v = arg;
    v->release_rc = dlock_lock_release(v->m);
    v->held_rc = dlock_lock_is_held(v->m, &v->held);
    v->try_rc = dlock_lock_try_acquire(v->m, 0, 5000);
    return NULL;
}

static void
test_another_thread_cannot_release_or_take_it_and_every_member_stays_held(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    cluster cl;
    cluster_start(&cl, 0);
    dlock_lock *members[NSERVERS];
    new_members(&cl, members);
    dlock_lock *m = new_multilock(members, NSERVERS);
    ASSERT_RC(dlock_lock_acquire(m, 20000), DLOCK_OK);
    other_view v = {.m = m, .held = true};
    on_other_thread(release_and_try_from_other_thread, &v);
    ASSERT_RC(v.release_rc, DLOCK_ENOTOWNER);
    ASSERT_RC(v.held_rc, DLOCK_OK);
    assert_false(v.held);
    ASSERT_RC(v.try_rc, DLOCK_ETIMEDOUT);
    for (int i = 0; i < NSERVERS; i++) {
        assert_int_equal(holds_on(cl.f[i], cl.c[i], member_names[i]), 1);
        ASSERT_BETWEEN(redis_fixture_int(cl.f[i], "HLEN %s", member_names[i]), 1, 1);
    }
    ASSERT_RC(dlock_lock_release(m), DLOCK_OK);
    assert_int_equal(members_present(&cl), 0);
    dlock_lock_free(m);
    free_locks(members, NSERVERS);
    cluster_stop(&cl);
}

static void test_force_release_frees_every_member_whoever_holds_them(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    cluster cl;
    cluster_start(&cl, 0);
    dlock_client *others[NSERVERS];
    dlock_lock *theirs[NSERVERS], *members[NSERVERS];
    for (int i = 0; i < NSERVERS; i++) {
        others[i] = connect_client(cl.f[i]);
        theirs[i] = new_lock(others[i], member_names[i]);
    }
    new_members(&cl, members);
    dlock_lock *their_m = new_multilock(theirs, NSERVERS);
    dlock_lock *m = new_multilock(members, NSERVERS);
    bool was = false;
    ASSERT_RC(dlock_lock_force_release(m, &was), DLOCK_OK);
    assert_false(was);
    ASSERT_RC(dlock_lock_acquire(their_m, 30000), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(m, 0, 30000), DLOCK_ETIMEDOUT);
    ASSERT_RC(dlock_lock_force_release(m, &was), DLOCK_OK);
    assert_true(was);
    assert_int_equal(members_present(&cl), 0);
    ASSERT_RC(dlock_lock_try_acquire(m, 0, 30000), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(m), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(their_m), DLOCK_ELOST);
    dlock_lock_free(m);
    dlock_lock_free(their_m);
    free_locks(members, NSERVERS);
    free_locks(theirs, NSERVERS);
    for (int i = 0; i < NSERVERS; i++)
        ASSERT_RC(dlock_client_free(others[i]), DLOCK_OK);
    cluster_stop(&cl);
}

/* ---- fencing tokens ---------------------------------------------------------------------- */

static void test_token_is_the_largest_of_the_fenced_members_tokens(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    cluster cl;
    cluster_start(&cl, 0);
    /* counters at 10, 41, 7: the next tokens are 11, 42, 8 */
    const long long counters[NSERVERS] = {10, 41, 7};
    for (int i = 0; i < NSERVERS; i++)
        assert_int_equal(redis_fixture_int(cl.f[i], "INCRBY redisson_lock_token:{%s} %lld",
                                           member_names[i], counters[i]),
                         counters[i]);
    dlock_lock *members[NSERVERS];
    for (int i = 0; i < NSERVERS; i++)
        members[i] = new_fenced(cl.c[i], member_names[i]);
    dlock_lock *m = new_multilock(members, NSERVERS);
    uint64_t token = 0;
    ASSERT_RC(dlock_lock_token(m, &token), DLOCK_ENOTOWNER);
    ASSERT_RC(dlock_lock_acquire(m, 10000), DLOCK_OK);
    ASSERT_RC(dlock_lock_token(m, &token), DLOCK_OK);
    assert_int_equal(token, 42);
    ASSERT_RC(dlock_lock_token_of(m, dlock_thread_owner(), &token), DLOCK_OK);
    assert_int_equal(token, 42);
    ASSERT_RC(dlock_lock_release(m), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(m, 10000), DLOCK_OK);
    ASSERT_RC(dlock_lock_token(m, &token), DLOCK_OK);
    assert_int_equal(token, 43);
    ASSERT_RC(dlock_lock_release(m), DLOCK_OK);
    dlock_lock_free(m);
    free_locks(members, NSERVERS);

    /* plain members: no token */
    new_members(&cl, members);
    m = new_multilock(members, NSERVERS);
    ASSERT_RC(dlock_lock_acquire(m, 10000), DLOCK_OK);
    ASSERT_RC(dlock_lock_token(m, &token), DLOCK_EINVAL);
    ASSERT_RC(dlock_lock_release(m), DLOCK_OK);
    dlock_lock_free(m);
    free_locks(members, NSERVERS);
    cluster_stop(&cl);
}

/* ---- bad input --------------------------------------------------------------------------- */

static void ignore_lock_cb(dlock_lock *l, int status, void *arg) {
    (void)l;
    (void)status;
    (void)arg;
}

static void test_bad_arguments_are_einval(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    cluster cl;
    cluster_start(&cl, 0);
    dlock_lock *members[NSERVERS];
    new_members(&cl, members);
    dlock_lock *untouched = (dlock_lock *)&cl; /* must stay as it is on failure */
    dlock_lock *out = untouched;
    ASSERT_RC(dlock_multilock_new(NULL, 3, &out), DLOCK_EINVAL);
    ASSERT_RC(dlock_multilock_new(members, 0, &out), DLOCK_EINVAL);
    ASSERT_RC(dlock_multilock_new(members, NSERVERS, NULL), DLOCK_EINVAL);
    dlock_lock *with_null[] = {members[0], NULL, members[2]};
    ASSERT_RC(dlock_multilock_new(with_null, 3, &out), DLOCK_EINVAL);
    dlock_lock *repeated[] = {members[0], members[1], members[0]};
    ASSERT_RC(dlock_multilock_new(repeated, 3, &out), DLOCK_EINVAL);
    assert_ptr_equal(out, untouched);
    dlock_lock *m = new_multilock(members, NSERVERS);
    dlock_lock *nested[] = {m, members[0]};
    ASSERT_RC(dlock_multilock_new(nested, 2, &out), DLOCK_EINVAL);
    ASSERT_RC(dlock_redlock_new(nested, 2, &out), DLOCK_EINVAL);
    assert_ptr_equal(out, untouched);
    /* the calls' own checks */
    ASSERT_RC(dlock_lock_acquire(m, 0), DLOCK_EINVAL);
    ASSERT_RC(dlock_lock_try_acquire(m, -5, 1000), DLOCK_EINVAL);
    ASSERT_RC(dlock_lock_is_held(m, NULL), DLOCK_EINVAL);
    ASSERT_RC(dlock_lock_ttl(m, NULL), DLOCK_EINVAL);
    /* the async face's own checks: owner 0, no callback */
    ASSERT_RC(dlock_lock_acquire_async(m, 0, 0, 1000, ignore_lock_cb, NULL), DLOCK_EINVAL);
    ASSERT_RC(dlock_lock_release_async(m, 7, NULL, NULL), DLOCK_EINVAL);
    /* none of that touched Redis */
    assert_int_equal(members_present(&cl), 0);
    dlock_lock_free(m);
    dlock_lock_free(NULL);
    free_locks(members, NSERVERS);
    cluster_stop(&cl);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_acquire_takes_every_member_for_this_thread_and_release_frees_them_all),
        cmocka_unit_test(
            test_reentrant_acquire_counts_two_holds_on_every_member_and_needs_two_releases),
        cmocka_unit_test(
            test_a_member_held_elsewhere_times_out_after_the_wait_and_leaves_no_member_held),
        cmocka_unit_test(test_waiting_for_a_member_freed_later_gets_every_member_once_it_is_freed),
        cmocka_unit_test(test_another_thread_cannot_release_or_take_it_and_every_member_stays_held),
        cmocka_unit_test(test_force_release_frees_every_member_whoever_holds_them),
        cmocka_unit_test(test_token_is_the_largest_of_the_fenced_members_tokens),
        cmocka_unit_test(test_bad_arguments_are_einval),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
