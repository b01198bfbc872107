/* SPDX-License-Identifier: MIT */
/* test_client_stats.c — dlock_client_stats(): the gauges follow a waiter and a holder on one
 * client (calls in flight, waits, leases held, subscriptions), and the counters move with
 * what the client lives through (renewals, messages, a lease lost to a force release, a
 * connection killed; wakes: test_wait_wakes.c). Every test starts its own server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core_call.h"
#include "dlock.h"
#include "harness.h"
#include "redis_fixture.h"
#include "test_util.h"
#include "stats_helpers.h"

#define BUDGET_S 60
/* A renewal every second: two come soon, and a loaded machine (valgrind) does not lose the
 * lease, which takes a renewal 2 s late (600 ms lost it under valgrind). */
#define WATCHDOG_MS 3000

typedef struct waiter {
    dlock_lock *l;
    blocking_call call;
} waiter;

static int acquire_and_keep(void *arg) {
    waiter *w = arg;
    return dlock_lock_acquire(w->l, DLOCK_WATCHDOG);
}

static void
test_stats_follow_a_waiter_a_holder_renewals_a_lost_lease_and_a_reconnect(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client_cfg(f, (test_client_cfg){.watchdog_ms = WATCHDOG_MS});
    dlock_client *other = connect_client(f);
    dlock_lock *l = NULL, *forcer = NULL;
    ASSERT_OK(dlock_lock_new(c, "stats", &l));
    ASSERT_OK(dlock_lock_new(other, "stats", &forcer));

    dlock_stats s = stats_of(c);
    assert_int_equal(s.calls_in_flight, 0);
    assert_int_equal(s.waits, 0);
    assert_int_equal(s.leases_held, 0);
    assert_int_equal(s.subscriptions, 0);
    assert_int_equal(s.renewals_sent, 0);
    assert_int_equal(s.leases_lost, 0);
    assert_int_equal(s.reconnects, 0);
    assert_int_equal(s.messages, 0);

    /* a holder under the watchdog, and a waiter of the same client */
    ASSERT_OK(dlock_lock_acquire(l, DLOCK_WATCHDOG));
    assert_int_equal(stats_of(c).leases_held, 1);
    waiter w = {.l = l};
    blocking_call_start_asleep(&w.call, acquire_and_keep, &w, f,
                               (asleep_sign){"redisson_lock__channel:{stats}", 1, 2, NULL});
    s = stats_of(c);
    assert_int_equal(s.calls_in_flight, 1);
    assert_int_equal(s.waits, 1);
    /* the lock's channel, and its turn channel (the hand-off's: whose turn a release is) */
    POLL_STAT(c, subscriptions, v == 2);

    /* two renewal periods: the held lease is renewed at least twice */
    POLL_STAT(c, renewals_sent, v >= 2);
    s = stats_of(c);
    assert_true(s.renewals_late <= s.renewals_sent);
    assert_true(s.renewal_lag_max_ms >= 0);

    /* the release wakes the waiter by a message; it then holds under the watchdog */
    ASSERT_OK(dlock_lock_release(l));
    ASSERT_OK(blocking_call_join(&w.call));
    s = stats_of(c);
    assert_true(s.messages >= 1);
    assert_int_equal(s.waits, 0);
    assert_int_equal(s.calls_in_flight, 0);
    assert_int_equal(s.leases_held, 1);
    POLL_STAT(c, subscriptions, v == 0);

    /* another client deletes the lock: the next renewal finds the lease gone */
    bool was_locked = false;
    ASSERT_OK(dlock_lock_force_release(forcer, &was_locked));
    assert_true(was_locked);
    POLL_STAT(c, leases_lost, v == 1);
    assert_int_equal(stats_of(c).leases_held, 0);

    /* both connections killed (a subscriber without channels is a "normal" client to
     * Redis): one reconnect each, and the client works again */
    assert_int_equal(stats_of(c).reconnects, 0);
    assert_true(redis_fixture_client_kill_type(f, "normal") >= 2);
    POLL_STAT(c, reconnects, v == 2);
    ASSERT_OK(dlock_client_ping(c));
    s = stats_of(c);
    assert_int_equal(s.reconnects, 2);
    assert_int_equal(s.calls_in_flight, 0);

    dlock_lock_free(forcer);
    dlock_lock_free(l);
    dlock_client_free(other);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static atomic_llong calls_seen_in_callback = -1;

static void note_calls_in_flight(dlock_client *c, int status, void *arg) {
    (void)status;
    (void)arg;
    atomic_store(&calls_seen_in_callback, (long long)stats_of(c).calls_in_flight);
}

/* What docs/monitoring.md says of the gauges beyond "0 when idle" (test_stats_idle.c): a
 * lease counts once per lock and owner however often it was taken, a composite's members
 * count on their own clients, and a call is over for calls_in_flight when its callback
 * starts. */
static void test_stats_count_a_reentrant_hold_once_a_members_lease_on_its_client(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f), *c2 = connect_client(f);
    dlock_lock *l = NULL, *members[2] = {NULL, NULL}, *ml = NULL;
    ASSERT_OK(dlock_lock_new(c, "reentrant", &l));
    ASSERT_OK(dlock_lock_acquire(l, DLOCK_WATCHDOG));
    ASSERT_OK(dlock_lock_acquire(l, DLOCK_WATCHDOG));
    dlock_stats s = stats_of(c);
    assert_int_equal(s.leases_held, 1);
    assert_int_equal(s.waits, 0);

    /* a MultiLock homed on c with a member on c2 */
    ASSERT_OK(dlock_lock_new(c, "member.a", &members[0]));
    ASSERT_OK(dlock_lock_new(c2, "member.b", &members[1]));
    ASSERT_OK(dlock_multilock_new(members, 2, &ml));
    ASSERT_OK(dlock_lock_acquire(ml, DLOCK_WATCHDOG));
    assert_int_equal(stats_of(c).leases_held, 2);
    assert_int_equal(stats_of(c2).leases_held, 1);
    ASSERT_OK(dlock_lock_release(ml));
    assert_int_equal(stats_of(c2).leases_held, 0);

    ASSERT_OK(dlock_client_ping_async(c, note_calls_in_flight, NULL));
    POLL_STAT(c, calls_in_flight, atomic_load(&calls_seen_in_callback) >= 0);
    assert_int_equal(atomic_load(&calls_seen_in_callback), 0);

    ASSERT_OK(dlock_lock_release(l));
    assert_int_equal(stats_of(c).leases_held, 1);
    ASSERT_OK(dlock_lock_release(l));
    assert_int_equal(stats_of(c).leases_held, 0);
    dlock_lock_free(ml);
    dlock_lock_free(members[0]);
    dlock_lock_free(members[1]);
    dlock_lock_free(l);
    dlock_client_free(c2);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static atomic_int lost_callbacks = 0;

static void count_lost(dlock_lock *l, uint64_t owner, int reason, void *arg) {
    (void)l;
    (void)owner;
    (void)reason;
    (void)arg;
    atomic_fetch_add(&lost_callbacks, 1);
}

/* leases_lost counts every hold the lost callback reports, not only the watchdog's
 * findings: a release that finds its lock gone (its lease given, or under the watchdog before
 * the next renewal) reports it, and counts, once. */
static void test_stats_count_a_lease_a_release_finds_lost_as_the_callback_reports_it(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f); /* the default watchdog: no renewal within the test */
    dlock_client *other = connect_client(f);
    dlock_lock *l = NULL, *forcer = NULL;
    ASSERT_OK(dlock_lock_new(c, "stats.lost", &l));
    ASSERT_OK(dlock_lock_new(other, "stats.lost", &forcer));
    ASSERT_OK(dlock_lock_on_lost(l, count_lost, NULL));
    bool was_locked = false;

    int64_t leases[] = {60000, DLOCK_WATCHDOG};
    for (int i = 0; i < 2; i++) {
        ASSERT_OK(dlock_lock_acquire(l, leases[i]));
        ASSERT_OK(dlock_lock_force_release(forcer, &was_locked));
        assert_true(was_locked);
        ASSERT_RC(dlock_lock_release(l), DLOCK_ELOST);
        assert_int_equal(atomic_load(&lost_callbacks), i + 1);
        assert_int_equal(stats_of(c).leases_lost, (uint64_t)i + 1);
    }
    assert_int_equal(stats_of(c).leases_held, 0);
    assert_int_equal(stats_of(other).leases_lost, 0);

    dlock_lock_free(forcer);
    dlock_lock_free(l);
    dlock_client_free(other);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* Time-outs and errors by the kind of object: each call on c ends as the test makes it
 * (another client holds the lock, no permit, a latch not counted down, a key of another type
 * under the fair lock), and lands in its kind's slot; a success lands in none. */
static void test_stats_count_timeouts_and_errors_by_kind(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_client *other = connect_client(f);
    static const char *const kinds[] = {DLOCK_STATS_KIND_NAMES};
    enum { OTHER, LOCK, SPIN_LOCK, FAIR_LOCK, READ_LOCK, WRITE_LOCK, SEMAPHORE, PERMITS, LATCH };
    assert_string_equal(kinds[LOCK], "lock");
    assert_string_equal(kinds[FAIR_LOCK], "fair_lock");
    assert_string_equal(kinds[SEMAPHORE], "semaphore");
    assert_string_equal(kinds[LATCH], "latch");

    dlock_lock *held = NULL, *tried = NULL, *fenced = NULL, *spin_held = NULL, *spin = NULL;
    ASSERT_OK(dlock_lock_new(other, "kinds.lock", &held));
    ASSERT_OK(dlock_lock_acquire(held, 60000));
    ASSERT_OK(dlock_lock_new(c, "kinds.lock", &tried));
    ASSERT_RC(dlock_lock_try_acquire(tried, 0, 60000), DLOCK_ETIMEDOUT);
    ASSERT_OK(dlock_fencedlock_new(c, "kinds.lock", &fenced)); /* a fenced lock is a "lock" */
    ASSERT_RC(dlock_lock_try_acquire(fenced, 0, 60000), DLOCK_ETIMEDOUT);
    ASSERT_OK(dlock_spinlock_new(other, "kinds.spin", &spin_held));
    ASSERT_OK(dlock_lock_acquire(spin_held, 60000));
    ASSERT_OK(dlock_spinlock_new(c, "kinds.spin", &spin));
    ASSERT_RC(dlock_lock_try_acquire(spin, 0, 60000), DLOCK_ETIMEDOUT);

    dlock_semaphore *sem = NULL;
    ASSERT_OK(dlock_semaphore_new(c, "kinds.sem", &sem));
    bool was_set = false;
    ASSERT_OK(dlock_semaphore_try_set_permits(sem, 1, &was_set));
    ASSERT_OK(dlock_semaphore_try_acquire(sem, 1, 0)); /* a success counts in no slot */
    ASSERT_RC(dlock_semaphore_try_acquire(sem, 1, 0), DLOCK_ETIMEDOUT);
    dlock_latch *latch = NULL;
    ASSERT_OK(dlock_latch_new(c, "kinds.latch", &latch));
    ASSERT_OK(dlock_latch_try_set_count(latch, 1, &was_set));
    ASSERT_RC(dlock_latch_await(latch, 0), DLOCK_ETIMEDOUT);

    freeReplyObject(redis_fixture_cmd(f, "SET kinds.fair not-a-hash"));
    dlock_lock *fair = NULL;
    ASSERT_OK(dlock_fairlock_new(c, "kinds.fair", &fair));
    ASSERT_RC(dlock_lock_try_acquire(fair, 0, 60000), DLOCK_EREDIS); /* WRONGTYPE */

    dlock_stats s = stats_of(c);
    uint64_t want_timeouts[DLOCK_STATS_KINDS] = {
        [LOCK] = 2, [SPIN_LOCK] = 1, [SEMAPHORE] = 1, [LATCH] = 1};
    uint64_t want_errors[DLOCK_STATS_KINDS] = {[FAIR_LOCK] = 1};
    for (int k = 0; k < DLOCK_STATS_KINDS; k++) {
        if (s.acquire_timeouts_by_kind[k] != want_timeouts[k] ||
            s.acquire_errors_by_kind[k] != want_errors[k])
            fail_msg("kind %d (%s): %llu time-outs, %llu errors; expected %llu and %llu", k,
                     k < (int)(sizeof(kinds) / sizeof(kinds[0])) ? kinds[k] : "unnamed",
                     (unsigned long long)s.acquire_timeouts_by_kind[k],
                     (unsigned long long)s.acquire_errors_by_kind[k],
                     (unsigned long long)want_timeouts[k], (unsigned long long)want_errors[k]);
    }
    /* the same failures as by code */
    assert_int_equal(s.acquire_failures[-DLOCK_ETIMEDOUT], 5);
    assert_int_equal(s.acquire_failures[-DLOCK_EREDIS], 1);
    /* the other client's successes count nowhere */
    dlock_stats o = stats_of(other);
    for (int k = 0; k < DLOCK_STATS_KINDS; k++)
        assert_true(o.acquire_timeouts_by_kind[k] == 0 && o.acquire_errors_by_kind[k] == 0);

    dlock_lock_free(fair);
    dlock_latch_free(latch);
    dlock_semaphore_free(sem);
    dlock_lock_free(spin);
    dlock_lock_free(spin_held);
    dlock_lock_free(fenced);
    dlock_lock_free(tried);
    dlock_lock_free(held);
    dlock_client_free(other);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_stats_refuses_null_arguments_and_an_unset_size(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_stats s;
    dlock_stats_init(&s);
    ASSERT_EINVAL(dlock_client_stats(NULL, &s));
    ASSERT_EINVAL(dlock_client_stats(c, NULL));
    memset(&s, 0, sizeof(s));
    ASSERT_EINVAL(dlock_client_stats(c, &s));
    s.size = sizeof(s) + 1;
    ASSERT_EINVAL(dlock_client_stats(c, &s));
    dlock_stats_init(NULL); /* a no-op */
    dlock_client_free(c);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stats_follow_a_waiter_a_holder_renewals_a_lost_lease_and_a_reconnect),
        cmocka_unit_test(test_stats_count_a_reentrant_hold_once_a_members_lease_on_its_client),
        cmocka_unit_test(test_stats_count_timeouts_and_errors_by_kind),
        cmocka_unit_test(test_stats_count_a_lease_a_release_finds_lost_as_the_callback_reports_it),
        cmocka_unit_test(test_stats_refuses_null_arguments_and_an_unset_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
