/* SPDX-License-Identifier: MIT */
/* test_max_hold.c — a bound on a watchdog hold (dlock_options.max_hold_ms,
 * dlock_lock_set_max_hold): renewed until the bound, then left to run out in Redis (not
 * deleted), the lost callback told DLOCK_LOST_MAX_HOLD once, the release DLOCK_ELOST, and
 * nobody else let in before the lease ran out. The per-handle setting beats the client's,
 * 0 is no bound, bad values change nothing; a read half and a composite are bounded too.
 *
 * Leases are WATCHDOG_MS (3 s) and bounds BOUND_MS (4 s, past three renewal ticks), so that
 * a loaded machine's late tick still renews before the bound; every wait for a state is a
 * poll with a generous bound. It takes about 25 s. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "dlock.h"
#include "harness.h"
#include "redis_fixture.h"
#include "test_util.h"

#define BUDGET_S 120
#define WATCHDOG_MS 3000
#define BOUND_MS 4000
#define POLL_BOUND_MS 60000

/* What the lost callbacks of a handle heard. */
typedef struct lost_log {
    atomic_int count;
    atomic_int reason;
} lost_log;

static void on_lost(dlock_lock *l, uint64_t owner, int reason, void *arg) {
    (void)l;
    (void)owner;
    lost_log *log = arg;
    atomic_store(&log->reason, reason);
    atomic_fetch_add(&log->count, 1);
}

static dlock_client *bounded_client(redis_fixture *f, int64_t max_hold_ms) {
    dlock_options o;
    test_client_options(f, &(test_client_cfg){.watchdog_ms = WATCHDOG_MS}, &o);
    o.max_hold_ms = max_hold_ms;
    dlock_client *c = NULL;
    ASSERT_OK(dlock_client_new(&o, &c));
    return c;
}

static uint64_t renewals_sent(dlock_client *c) {
    dlock_stats s;
    dlock_stats_init(&s);
    ASSERT_OK(dlock_client_stats(c, &s));
    return s.renewals_sent;
}

static bool key_exists(redis_fixture *f, const char *key) {
    return redis_fixture_int(f, "EXISTS %s", key) == 1;
}

/* Polls until the key is gone (it must go within POLL_BOUND_MS); when it went, about. */
static int64_t wait_key_gone(redis_fixture *f, const char *key) {
    int64_t give_up = test_now_ms() + test_slack_ms(POLL_BOUND_MS);
    while (key_exists(f, key)) {
        if (test_now_ms() > give_up)
            fail_msg("%s still there after %lld ms", key, (long long)test_slack_ms(POLL_BOUND_MS));
        test_sleep_ms(20);
    }
    return test_now_ms();
}

static void wait_lost(lost_log *log) {
    int64_t give_up = test_now_ms() + test_slack_ms(POLL_BOUND_MS);
    while (atomic_load(&log->count) == 0) {
        if (test_now_ms() > give_up)
            fail_msg("no lost callback within %lld ms", (long long)test_slack_ms(POLL_BOUND_MS));
        test_sleep_ms(20);
    }
}

/* Another client's blocking acquire of the lock, on a thread of its own. */
typedef struct rival {
    dlock_lock *lock;
    int rc;
    int64_t got_at_ms;
} rival;

static void *rival_acquire(void *arg) {
    rival *r = arg;
    r->rc = dlock_lock_try_acquire(r->lock, test_slack_ms(POLL_BOUND_MS), 30000);
    r->got_at_ms = test_now_ms();
    if (r->rc == DLOCK_OK)
        r->rc = dlock_lock_release(r->lock);
    return NULL;
}

/* ---- the bound --------------------------------------------------------------------------- */

static void test_a_bounded_hold_is_renewed_then_runs_out_by_its_lease(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = bounded_client(f, BOUND_MS);
    dlock_client *other = bounded_client(f, 0);
    dlock_lock *l = NULL, *l2 = NULL;
    ASSERT_OK(dlock_lock_new(c, "bounded", &l));
    ASSERT_OK(dlock_lock_new(other, "bounded", &l2));
    lost_log lost = {0};
    ASSERT_OK(dlock_lock_on_lost(l, on_lost, &lost));

    int64_t asked_at = test_now_ms();
    ASSERT_OK(dlock_lock_acquire(l, DLOCK_WATCHDOG));
    rival r = {.lock = l2};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, rival_acquire, &r), 0);

    /* renewed before the bound: renewals are sent only before it */
    int64_t give_up = test_now_ms() + test_slack_ms(POLL_BOUND_MS);
    while (renewals_sent(c) == 0 && test_now_ms() < give_up)
        test_sleep_ms(20);
    assert_true(renewals_sent(c) > 0);

    /* then left alone: the key expires by its lease, and is not deleted before */
    int64_t gone_at = wait_key_gone(f, "bounded");
    /* a renewal was sent after the acquire, so the key outlived the first lease */
    assert_true(gone_at > asked_at + WATCHDOG_MS);
    uint64_t renewals_at_end = renewals_sent(c);

    wait_lost(&lost);
    assert_int_equal(atomic_load(&lost.reason), DLOCK_LOST_MAX_HOLD);
    ASSERT_RC(dlock_lock_release(l), DLOCK_ELOST);
    ASSERT_RC(dlock_lock_release(l), DLOCK_ENOTOWNER);

    /* the rival got it only once the lease had run out */
    assert_int_equal(pthread_join(t, NULL), 0);
    ASSERT_OK(r.rc);
    assert_true(r.got_at_ms > asked_at + WATCHDOG_MS);

    /* told once; nothing renewed after the bound */
    test_sleep_ms(WATCHDOG_MS / 3 * 2);
    assert_int_equal(atomic_load(&lost.count), 1);
    assert_int_equal(renewals_sent(c), renewals_at_end);

    dlock_lock_free(l);
    dlock_lock_free(l2);
    dlock_client_free(c);
    dlock_client_free(other);
    redis_fixture_stop(f);
}

/* No bound (0, the default): renewed past three leases, never lost. A handle's 0 beats its
 * client's bound too. */
static void test_no_bound_is_renewed_past_three_leases(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *unbounded = bounded_client(f, 0);
    dlock_client *bounded = bounded_client(f, BOUND_MS);
    dlock_lock *a = NULL, *b = NULL;
    ASSERT_OK(dlock_lock_new(unbounded, "unbounded-by-client", &a));
    ASSERT_OK(dlock_lock_new(bounded, "unbounded-by-handle", &b));
    ASSERT_OK(dlock_lock_set_max_hold(b, 0));
    lost_log lost_a = {0}, lost_b = {0};
    ASSERT_OK(dlock_lock_on_lost(a, on_lost, &lost_a));
    ASSERT_OK(dlock_lock_on_lost(b, on_lost, &lost_b));
    int64_t asked_at = test_now_ms();
    ASSERT_OK(dlock_lock_acquire(a, DLOCK_WATCHDOG));
    ASSERT_OK(dlock_lock_acquire(b, DLOCK_WATCHDOG));

    while (test_now_ms() < asked_at + 3 * WATCHDOG_MS + 500)
        test_sleep_ms(100);
    assert_true(key_exists(f, "unbounded-by-client"));
    assert_true(key_exists(f, "unbounded-by-handle"));
    assert_int_equal(atomic_load(&lost_a.count), 0);
    assert_int_equal(atomic_load(&lost_b.count), 0);
    ASSERT_OK(dlock_lock_release(a));
    ASSERT_OK(dlock_lock_release(b));

    dlock_lock_free(a);
    dlock_lock_free(b);
    dlock_client_free(unbounded);
    dlock_client_free(bounded);
    redis_fixture_stop(f);
}

/* A handle's bound on a client without one; a bad value after it changes nothing. */
static void test_a_handles_bound_beats_its_clients_and_bad_values_change_nothing(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = bounded_client(f, 0);
    dlock_lock *l = NULL;
    ASSERT_OK(dlock_lock_new(c, "bounded-handle", &l));
    ASSERT_OK(dlock_lock_set_max_hold(l, BOUND_MS));
    ASSERT_RC(dlock_lock_set_max_hold(l, -2), DLOCK_EINVAL);
    ASSERT_RC(dlock_lock_set_max_hold(l, DLOCK_MAX_TIME_MS + 1), DLOCK_EINVAL);
    ASSERT_RC(dlock_lock_set_max_hold(NULL, BOUND_MS), DLOCK_EINVAL);
    lost_log lost = {0};
    ASSERT_OK(dlock_lock_on_lost(l, on_lost, &lost));
    ASSERT_OK(dlock_lock_acquire(l, DLOCK_WATCHDOG));
    wait_key_gone(f, "bounded-handle");
    wait_lost(&lost);
    assert_int_equal(atomic_load(&lost.reason), DLOCK_LOST_MAX_HOLD);
    ASSERT_RC(dlock_lock_release(l), DLOCK_ELOST);

    /* DLOCK_MAX_HOLD_CLIENT: the client's (none) again */
    ASSERT_OK(dlock_lock_set_max_hold(l, DLOCK_MAX_HOLD_CLIENT));
    ASSERT_OK(dlock_lock_acquire(l, DLOCK_WATCHDOG));
    int64_t held_at = test_now_ms();
    while (test_now_ms() < held_at + BOUND_MS + WATCHDOG_MS + 500)
        test_sleep_ms(100);
    assert_true(key_exists(f, "bounded-handle"));
    ASSERT_OK(dlock_lock_release(l));
    assert_int_equal(atomic_load(&lost.count), 1);

    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_bad_client_bounds_are_einval(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    const int64_t bad[] = {-1, INT64_MIN, DLOCK_MAX_TIME_MS + 1, INT64_MAX};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        dlock_options o;
        test_client_options(f, &(test_client_cfg){0}, &o);
        o.max_hold_ms = bad[i];
        dlock_client *c = NULL;
        ASSERT_RC(dlock_client_new(&o, &c), DLOCK_EINVAL);
        assert_null(c);
        assert_non_null(strstr(dlock_last_error(), "max_hold_ms"));
    }
    dlock_options o;
    dlock_options_init(&o);
    assert_int_equal(o.max_hold_ms, 0);
    /* the lost callback's reason prints as itself */
    assert_string_equal(dlock_err_name(DLOCK_LOST_MAX_HOLD), "DLOCK_LOST_MAX_HOLD");
    assert_non_null(strstr(dlock_strerror(DLOCK_LOST_MAX_HOLD), "max_hold_ms"));
    dlock_client *c = bounded_client(f, DLOCK_MAX_TIME_MS);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* A read half and a composite (its members' holds) run out at the bound the same way. */
static void test_a_read_hold_and_a_composite_are_bounded(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = bounded_client(f, BOUND_MS);
    dlock_rwlock *rw = NULL;
    ASSERT_OK(dlock_rwlock_new(c, "bounded-rw", &rw));
    dlock_lock *members[2] = {NULL, NULL}, *multi = NULL;
    ASSERT_OK(dlock_lock_new(c, "bounded-m1", &members[0]));
    ASSERT_OK(dlock_lock_new(c, "bounded-m2", &members[1]));
    ASSERT_OK(dlock_multilock_new(members, 2, &multi));
    ASSERT_RC(dlock_lock_set_max_hold(multi, BOUND_MS), DLOCK_EINVAL); /* its members' */
    lost_log lost_read = {0}, lost_multi = {0};
    ASSERT_OK(dlock_lock_on_lost(dlock_rwlock_read(rw), on_lost, &lost_read));
    ASSERT_OK(dlock_lock_on_lost(multi, on_lost, &lost_multi));
    ASSERT_OK(dlock_lock_acquire(dlock_rwlock_read(rw), DLOCK_WATCHDOG));
    ASSERT_OK(dlock_lock_acquire(multi, DLOCK_WATCHDOG));

    wait_key_gone(f, "bounded-rw");
    wait_key_gone(f, "bounded-m1");
    wait_key_gone(f, "bounded-m2");
    wait_lost(&lost_read);
    wait_lost(&lost_multi);
    assert_int_equal(atomic_load(&lost_read.reason), DLOCK_LOST_MAX_HOLD);
    assert_int_equal(atomic_load(&lost_multi.reason), DLOCK_LOST_MAX_HOLD);
    ASSERT_RC(dlock_lock_release(dlock_rwlock_read(rw)), DLOCK_ELOST);
    ASSERT_RC(dlock_lock_release(multi), DLOCK_ELOST);

    dlock_lock_free(multi);
    dlock_lock_free(members[0]);
    dlock_lock_free(members[1]);
    dlock_rwlock_free(rw);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_client_bounds_are_einval),
        cmocka_unit_test(test_a_bounded_hold_is_renewed_then_runs_out_by_its_lease),
        cmocka_unit_test(test_a_handles_bound_beats_its_clients_and_bad_values_change_nothing),
        cmocka_unit_test(test_no_bound_is_renewed_past_three_leases),
        cmocka_unit_test(test_a_read_hold_and_a_composite_are_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
