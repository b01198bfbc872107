/* test_malformed_replies.c — replies dlock must survive, against a real redis-server: values
 * at the edge of what a script or a waiter can be told (a remaining lease of INT64_MAX, a
 * hold count of INT64_MAX, a fencing counter that went back) neither overflow nor come back
 * as DLOCK_OK with a state that is not Redis's.
 *
 * (Replies of the wrong shape per script — a string, +OK, nil, [], {1}, {1, 0} — need a
 * server that answers what it should not: tests/support/reply_injector.h. The shapes
 * themselves are proven in tests/unit/test_reply_shape.c.) */
#include "wait_helpers.h"

#include "dlock/lock.h"

/* A busy hint of INT64_MAX ms (a lease another client set, or a server that says so) is
 * "not before the deadline": the waiter sleeps until then. The sum now + hint overflowed
 * (UBSan: signed overflow in wait.c), and wrapped below now: the waiter attempted back to
 * back until its deadline. */
static void test_a_busy_hint_of_int64_max_sleeps_until_the_deadline(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    test_waiter *t[2] = {
        waiter_reset(0, "huge:{hint}", NULL, 300, INT64_MAX, &ops_wake_one),
        waiter_reset(1, "huge:{hint}", "huge:{hint}:channel", 300, INT64_MAX, &ops_wake_one),
    };
    start_waiters(w->c, t, 2);
    bool ok = false;
    POLL_UNTIL(ok, done_calls_of(t[0]) == 1 && done_calls_of(t[1]) == 1, test_slack_ms(3000));
    assert_true(ok);
    for (int i = 0; i < 2; i++) {
        seen s = look(t[i]);
        assert_int_equal(s.done_status, DLOCK_ETIMEDOUT);
        assert_true(s.done_ms - s.started_ms >= 300);
        /* the first attempt, one once subscribed (with a channel), one at the deadline */
        assert_in_range(s.attempts, 1, 3);
    }
}

/* Redis counts the owner's holds at INT64_MAX (its own HINCRBY got there): acquire.lua's
 * reply carries the count through a Lua number, which cannot hold it, and Redis answers
 * INT64_MIN. That is no hold count: DLOCK_EREDIS, nothing recorded, no loss reported (the
 * client took a count of INT64_MIN for the owner's and said DLOCK_OK). */
static void test_a_hold_count_a_script_cannot_say_is_eredis_and_nothing_recorded(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    dlock_lock *l;
    ASSERT_OK(dlock_lock_new(w->c, "huge-holds", &l));
    lost_reset();
    ASSERT_OK(dlock_lock_on_lost(l, record_lost, NULL));
    char field[128];
    owner_field(w->c, dlock_thread_owner(), field, sizeof(field));
    redis_fixture_int(w->f, "HSET huge-holds %s 9223372036854775806", field);

    assert_int_equal(dlock_lock_try_acquire(l, 0, 60000), DLOCK_EREDIS);
    assert_non_null(strstr(dlock_last_error(), "the integer -9223372036854775808"));
    assert_int_equal(lost_get().calls, 0);
    assert_int_equal(hget_int(w->f, "huge-holds", field), INT64_MAX);
    dlock_lock_free(l);
}

/* The fencing counter went back (a server that lost it, a reset by hand): the token the
 * script hands out is not above the owner's last one, so it fences nothing. The acquire is
 * DLOCK_EREDIS naming the token; the client keeps the old token and registers no lease: the
 * hold the script wrote runs out with its lease (the watchdog's, 300 ms), never renewed. */
static void test_a_fenced_token_that_does_not_rise_is_eredis_and_not_renewed(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    dlock_lock *l;
    ASSERT_OK(dlock_fencedlock_new(w->c, "sinking", &l));
    ASSERT_OK(dlock_lock_acquire(l, DLOCK_WATCHDOG));
    uint64_t first = 0;
    ASSERT_OK(dlock_lock_token(l, &first));
    ASSERT_OK(dlock_lock_release(l));
    redis_fixture_int(w->f, "DEL redisson_lock_token:{sinking}");

    assert_int_equal(dlock_lock_try_acquire(l, 1000, DLOCK_WATCHDOG), DLOCK_EREDIS);
    const char *text = dlock_last_error();
    assert_non_null(strstr(text, "unexpected reply"));
    assert_non_null(strstr(text, "the integer 1]"));
    uint64_t token = 0;
    ASSERT_OK(dlock_lock_token(l, &token));
    assert_int_equal(token, first);
    bool gone = false;
    POLL_UNTIL(gone, redis_fixture_int(w->f, "EXISTS sinking") == 0, test_slack_ms(3000));
    assert_true(gone);
    dlock_lock_free(l);
}

static int setup_short_watchdog(void **state) {
    return test_world_setup_cfg(state, (test_client_cfg){.watchdog_ms = 300});
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_busy_hint_of_int64_max_sleeps_until_the_deadline,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_hold_count_a_script_cannot_say_is_eredis_and_nothing_recorded, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_fenced_token_that_does_not_rise_is_eredis_and_not_renewed, setup_short_watchdog,
            teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
