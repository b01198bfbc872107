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
        cmocka_unit_test(test_stats_refuses_null_arguments_and_an_unset_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
