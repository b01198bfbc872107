/* SPDX-License-Identifier: MIT */
/* test_wait_wakes.c — the wait tests of test_wait.c, split from it by concern: wake counts.
 * Helpers: tests/support/wait_helpers.h. Every test starts its own server. */
#include "wait_helpers.h"

/* ---- wake counts and hand-offs -------------------------------------------------------------- */

/* The client's count of waiters a message woke (dlock_client_stats' wakes). */
static uint64_t wakes_of(dlock_client *c) {
    dlock_stats s;
    dlock_stats_init(&s);
    assert_int_equal(dlock_client_stats(c, &s), DLOCK_OK);
    return s.wakes;
}

static void test_one_message_with_wake_count_1_wakes_exactly_one_of_three_sleepers(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    test_waiter *ws[3];
    for (int i = 0; i < 3; i++)
        ws[i] = waiter_reset(i, "w:{one}", "w:{one}:ch", DLOCK_FOREVER, -1, &ops_wake_one);
    start_waiters(w->c, ws, 3);
    wait_settled(ws, 3, 2);
    for (int i = 0; i < 3; i++)
        assert_int_equal(attempts_of(ws[i]), 2);
    assert_int_equal(wakes_of(w->c), 0); /* asleep, and no message yet */

    redisReply *r = redis_fixture_cmd(w->f, "PUBLISH %s %s", "w:{one}:ch", "freed-one");
    assert_non_null(r);
    assert_int_equal(r->integer, 1); /* one subscription for the three */
    freeReplyObject(r);
    bool ok = false;
    POLL_UNTIL(ok, attempts_of(ws[0]) + attempts_of(ws[1]) + attempts_of(ws[2]) >= 7,
               test_slack_ms(1000));
    assert_true(ok);
    /* a fixed window: the one wake was used, nobody else wakes during it */
    test_sleep_ms(test_slack_ms(300));
    assert_int_equal(attempts_of(ws[0]), 3); /* the oldest sleeper */
    assert_int_equal(look(ws[0]).woken_attempts, 1);
    assert_int_equal(wakes_of(w->c), 1); /* counted in the client's stats too */
    assert_int_equal(attempts_of(ws[1]), 2);
    assert_int_equal(attempts_of(ws[2]), 2);
    for (int i = 0; i < 3; i++)
        assert_int_equal(done_calls_of(ws[i]), 0);

    cancel_waiters(w->c, ws, 3);
    POLL_UNTIL(ok, done_calls_of(ws[0]) + done_calls_of(ws[1]) + done_calls_of(ws[2]) == 3,
               test_slack_ms(1000));
    assert_true(ok);
    for (int i = 0; i < 3; i++)
        assert_int_equal(look(ws[i]).done_status, DLOCK_ECANCELED);
}

static void test_one_message_with_wake_count_all_or_null_wakes_all_three_sleepers(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    test_waiter *ws[6];
    for (int i = 0; i < 3; i++) /* wake_count NULL */
        ws[i] = waiter_reset(i, "w:{all}", "w:{all}:ch", DLOCK_FOREVER, -1, &ops_wake_default);
    for (int i = 3; i < 6; i++) /* wake_count -1 */
        ws[i] = waiter_reset(i, "w:{all2}", "w:{all2}:ch", DLOCK_FOREVER, -1, &ops_wake_all);
    start_waiters(w->c, ws, 6);
    wait_settled(ws, 6, 2);

    redisReply *r = redis_fixture_cmd(w->f, "PUBLISH %s %s", "w:{all}:ch", "freed-all");
    assert_non_null(r);
    freeReplyObject(r);
    r = redis_fixture_cmd(w->f, "PUBLISH %s %s", "w:{all2}:ch", "freed-all");
    assert_non_null(r);
    freeReplyObject(r);
    bool ok = false;
    POLL_UNTIL(ok, settled(ws, 6, 3), test_slack_ms(1000));
    assert_true(ok);
    for (int i = 0; i < 6; i++) {
        assert_int_equal(attempts_of(ws[i]), 3);
        assert_int_equal(look(ws[i]).woken_attempts, 1);
    }
    assert_int_equal(wakes_of(w->c), 6); /* two messages, three sleepers each */

    /* the same with the object free: all three of a channel obtain on one message */
    release(w->f, "w:{all}", "w:{all}:ch", NULL);
    POLL_UNTIL(ok, done_calls_of(ws[0]) + done_calls_of(ws[1]) + done_calls_of(ws[2]) == 3,
               test_slack_ms(1000));
    assert_true(ok);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(look(ws[i]).done_status, DLOCK_OK);
        assert_int_equal(attempts_of(ws[i]), 4);
    }
    cancel_waiters(w->c, ws + 3, 3);
    POLL_UNTIL(ok, done_calls_of(ws[3]) + done_calls_of(ws[4]) + done_calls_of(ws[5]) == 3,
               test_slack_ms(1000));
    assert_true(ok);
}

/* Whether each waiter made at least expect[i] attempts since base[i] was taken. */
static bool attempts_reached(test_waiter **ws, const int *base, const int *expect, int n) {
    for (int i = 0; i < n; i++)
        if (attempts_of(ws[i]) - base[i] < expect[i])
            return false;
    return true;
}

/* Publishes msg on channel; then each waiter has made exactly expect[i] attempts since
 * base[i] was taken: the attempts awaited within a bound, then the waiters left to settle
 * (50 ms without an attempt), and no attempt more than expected. A message that must wake
 * nobody is checked over that quiet window only: nothing tells when it reached the client. */
static void announce(world *w, const char *channel, const char *msg, test_waiter **ws,
                     const int *base, const int *expect, int n) {
    redisReply *r = redis_fixture_cmd(w->f, "PUBLISH %s %s", channel, msg);
    assert_non_null(r);
    assert_int_equal(r->integer, 1);
    freeReplyObject(r);
    bool ok = false;
    POLL_UNTIL(ok, attempts_reached(ws, base, expect, n), test_slack_ms(1000));
    if (ok) /* else the counts below say who fell short */
        wait_settled(ws, (size_t)n, 2);
    for (int i = 0; i < n; i++) {
        int extra = attempts_of(ws[i]) - base[i];
        if (extra != expect[i])
            printf("# waiter %d (need %lld): %d attempts since, expected %d\n", i,
                   (long long)ws[i]->need, extra, expect[i]);
        assert_int_equal(extra, expect[i]);
    }
}

static void
test_supply_message_wakes_the_oldest_waiters_that_fit_and_stops_at_the_first_misfit(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    static const int64_t needs[4] = {2, 1, 1, 3}; /* A, B, C, D in arrival order */
    test_waiter *ws[4];
    for (int i = 0; i < 4; i++) {
        ws[i] = waiter_reset(i, "w:{units}", "w:{units}:ch", DLOCK_FOREVER, -1, &ops_supply);
        ws[i]->need = needs[i];
    }
    start_waiters(w->c, ws, 4);
    wait_settled(ws, 4, 2);
    int base[4];
    for (int i = 0; i < 4; i++)
        base[i] = attempts_of(ws[i]);

    /* A (2) fits; B would not */
    announce(w, "w:{units}:ch", "2", ws, base, (const int[]){1, 0, 0, 0}, 4);
    /* A (2) + B (1); C would not */
    announce(w, "w:{units}:ch", "3", ws, base, (const int[]){2, 1, 0, 0}, 4);
    /* A does not fit: B may not overtake it */
    announce(w, "w:{units}:ch", "1", ws, base, (const int[]){2, 1, 0, 0}, 4);
    /* everyone: 2 + 1 + 1 + 3 */
    announce(w, "w:{units}:ch", "7", ws, base, (const int[]){3, 2, 1, 1}, 4);
    /* not a supply: wake_count (1) */
    announce(w, "w:{units}:ch", "freed", ws, base, (const int[]){4, 2, 1, 1}, 4);

    cancel_waiters(w->c, ws, 4);
    bool ok = false;
    POLL_UNTIL(ok,
               done_calls_of(ws[0]) + done_calls_of(ws[1]) + done_calls_of(ws[2]) +
                       done_calls_of(ws[3]) ==
                   4,
               test_slack_ms(1000));
    assert_true(ok);
}

static void test_woken_waiter_that_times_out_hands_its_wake_to_the_next_sleeper(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    /* A is the oldest sleeper and gets the message's one wake; its attempt answers only
     * after A's deadline (busy: the freed place was not enough for A), so A times out
     * without having used the wake. B, next in line, must get it; C keeps sleeping. */
    test_waiter *ws[3];
    int64_t a_wait = test_slack_ms(300); /* outlasts the setup */
    ws[0] = waiter_reset(0, "w:{handoff}", "w:{handoff}:ch", a_wait, -1, &ops_wake_one);
    ws[0]->busy_late_when_woken = true;
    ws[1] = waiter_reset(1, "w:{handoff}", "w:{handoff}:ch", DLOCK_FOREVER, -1, &ops_wake_one);
    ws[2] = waiter_reset(2, "w:{handoff}", "w:{handoff}:ch", DLOCK_FOREVER, -1, &ops_wake_one);
    start_waiters(w->c, ws, 3);
    wait_settled(ws, 3, 2);
    release(w->f, "w:{handoff}", "w:{handoff}:ch", NULL);

    bool ok = false;
    POLL_UNTIL(ok, done_calls_of(ws[0]) == 1, a_wait + test_slack_ms(1000));
    assert_true(ok);
    assert_int_equal(look(ws[0]).done_status, DLOCK_ETIMEDOUT);
    assert_int_equal(look(ws[0]).woken_attempts, 1);
    POLL_UNTIL(ok, done_calls_of(ws[1]) == 1, test_slack_ms(500));
    if (!ok)
        printf("# B made %d attempts, C %d: the wake A did not use was dropped\n",
               attempts_of(ws[1]), attempts_of(ws[2]));
    assert_true(ok);
    assert_int_equal(look(ws[1]).done_status, DLOCK_OK);
    assert_int_equal(look(ws[1]).woken_attempts, 1);
    /* a fixed window: the wake was handed on once, C keeps sleeping during it */
    test_sleep_ms(50);
    assert_int_equal(attempts_of(ws[2]), 2);
    assert_int_equal(done_calls_of(ws[2]), 0);
    cancel_waiters(w->c, ws + 2, 1);
    POLL_UNTIL(ok, done_calls_of(ws[2]) == 1, test_slack_ms(1000));
    assert_true(ok);
}

static void
test_woken_waiter_canceled_during_its_attempt_hands_its_wake_to_the_next_sleeper(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    /* as above, but A leaves because it is canceled while its woken attempt is out */
    test_waiter *ws[3];
    for (int i = 0; i < 3; i++)
        ws[i] =
            waiter_reset(i, "w:{handoff2}", "w:{handoff2}:ch", DLOCK_FOREVER, -1, &ops_wake_one);
    ws[0]->busy_late_when_woken = true;
    start_waiters(w->c, ws, 3);
    wait_settled(ws, 3, 2);
    release(w->f, "w:{handoff2}", "w:{handoff2}:ch", NULL);
    bool ok = false;
    POLL_UNTIL(ok, look(ws[0]).woken_attempts == 1, test_slack_ms(1000));
    assert_true(ok);
    cancel_waiters(w->c, ws, 1); /* its answer is held back: still in flight */
    assert_int_equal(done_calls_of(ws[0]), 0);

    POLL_UNTIL(ok, done_calls_of(ws[0]) == 1, race_hold_ms() + test_slack_ms(1000));
    assert_true(ok);
    assert_int_equal(look(ws[0]).done_status, DLOCK_ECANCELED);
    POLL_UNTIL(ok, done_calls_of(ws[1]) == 1, test_slack_ms(500));
    if (!ok)
        printf("# B made %d attempts, C %d: the wake A did not use was dropped\n",
               attempts_of(ws[1]), attempts_of(ws[2]));
    assert_true(ok);
    assert_int_equal(look(ws[1]).done_status, DLOCK_OK);
    /* a fixed window: the wake was handed on once, C keeps sleeping during it */
    test_sleep_ms(50);
    assert_int_equal(attempts_of(ws[2]), 2);
    cancel_waiters(w->c, ws + 2, 1);
    POLL_UNTIL(ok, done_calls_of(ws[2]) == 1, test_slack_ms(1000));
    assert_true(ok);
}

static void test_woken_waiter_whose_attempt_fails_hands_its_wake_to_the_next_sleeper(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    test_waiter *ws[3];
    ws[0] = waiter_reset(0, "w:{fail}", "w:{fail}:ch", DLOCK_FOREVER, -1, &ops_wake_one);
    ws[0]->fail_when_woken = true;
    ws[1] = waiter_reset(1, "w:{fail}", "w:{fail}:ch", DLOCK_FOREVER, -1, &ops_wake_one);
    ws[2] = waiter_reset(2, "w:{fail}", "w:{fail}:ch", DLOCK_FOREVER, -1, &ops_wake_one);
    start_waiters(w->c, ws, 3);
    wait_settled(ws, 3, 2);
    release(w->f, "w:{fail}", "w:{fail}:ch", NULL);

    bool ok = false;
    POLL_UNTIL(ok, done_calls_of(ws[0]) == 1 && done_calls_of(ws[1]) == 1, test_slack_ms(1000));
    assert_true(ok);
    assert_int_equal(look(ws[0]).done_status, DLOCK_ECONN); /* the attempt's error */
    assert_int_equal(look(ws[1]).done_status, DLOCK_OK);
    assert_int_equal(look(ws[1]).woken_attempts, 1);
    /* a fixed window: C keeps sleeping during it */
    test_sleep_ms(50);
    assert_int_equal(attempts_of(ws[2]), 2); /* one wake, handed on once */
    cancel_waiters(w->c, ws + 2, 1);
    POLL_UNTIL(ok, done_calls_of(ws[2]) == 1, test_slack_ms(1000));
    assert_true(ok);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_one_message_with_wake_count_1_wakes_exactly_one_of_three_sleepers, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_one_message_with_wake_count_all_or_null_wakes_all_three_sleepers, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_supply_message_wakes_the_oldest_waiters_that_fit_and_stops_at_the_first_misfit,
            setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_woken_waiter_that_times_out_hands_its_wake_to_the_next_sleeper, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_woken_waiter_canceled_during_its_attempt_hands_its_wake_to_the_next_sleeper, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_woken_waiter_whose_attempt_fails_hands_its_wake_to_the_next_sleeper, setup,
            teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
