/* SPDX-License-Identifier: MIT */
/* test_wait_cancel.c — the wait tests of test_wait.c, split from it by concern: cancel and the end.
 * Helpers: tests/support/wait_helpers.h. Every test starts its own server. */
#include "wait_helpers.h"

/* ---- cancel and the end of a queue ---------------------------------------------------------- */

static void test_cancel_of_a_sleeping_waiter_ends_it_canceled_after_the_call_returns(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    test_waiter *t =
        waiter_reset(0, "w:{cancel}", "w:{cancel}:ch", DLOCK_FOREVER, -1, &ops_wake_one);
    start_waiters(w->c, &t, 1);
    wait_settled(&t, 1, 2);
    cancel_waiters(w->c, &t, 1);
    bool ok = false;
    POLL_UNTIL(ok, done_calls_of(t) == 1, test_slack_ms(1000));
    assert_true(ok);
    seen s = look(t);
    assert_int_equal(s.done_status, DLOCK_ECANCELED);
    assert_false(s.done_inside_cancel);
    assert_int_equal(s.attempts, 2); /* cancel does not try again */
    /* canceling again, after done, is harmless and calls nothing */
    cancel_waiters(w->c, &t, 1);
    test_sleep_ms(50); /* a fixed window: no second done call */
    assert_int_equal(done_calls_of(t), 1);
    /* the state asserted is "nothing left subscribed"; the bound only keeps a defect from
     * hanging the test (a TSan build beside two more on 2 CPUs once took over 1.5 s) */
    POLL_UNTIL(ok, subscribed_channels(w->f) == 0, test_slack_ms(3000));
    assert_true(ok);
}

static void test_cancel_during_an_attempt_waits_for_its_answer_and_keeps_a_success(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    /* every answer reaches the engine 200 ms late: the cancel lands while one is out */
    test_waiter *ws[2];
    ws[0] = waiter_reset(0, "w:{late-ok}", "w:{late}:ch", DLOCK_FOREVER, -1, &ops_wake_one);
    ws[1] = waiter_reset(1, "w:{late-busy}", "w:{late}:ch", DLOCK_FOREVER, -1, &ops_wake_one);
    ws[0]->hold_ms = ws[1]->hold_ms = 200;
    set_key(w->f, "w:{late-ok}");
    start_waiters(w->c, ws, 2);
    bool ok = false;
    POLL_UNTIL(ok, attempts_of(ws[0]) == 1 && attempts_of(ws[1]) == 1, test_slack_ms(1000));
    assert_true(ok);
    assert_int_equal(look(ws[0]).replies + look(ws[1]).replies, 0); /* both answers out */
    cancel_waiters(w->c, ws, 2);
    /* a fixed window: the cancel does not end a waiter whose attempt is out */
    test_sleep_ms(50);
    assert_int_equal(done_calls_of(ws[0]), 0); /* its attempt has not answered yet */
    assert_int_equal(done_calls_of(ws[1]), 0);
    POLL_UNTIL(ok, done_calls_of(ws[0]) == 1 && done_calls_of(ws[1]) == 1, test_slack_ms(1000));
    assert_true(ok);
    assert_int_equal(look(ws[0]).done_status, DLOCK_OK); /* the attempt obtained it */
    assert_int_equal(look(ws[1]).done_status, DLOCK_ECANCELED);
    assert_int_equal(attempts_of(ws[0]), 1);
    assert_int_equal(attempts_of(ws[1]), 1);
    test_sleep_ms(50); /* a fixed window: no second done call */
    assert_int_equal(done_calls_of(ws[0]) + done_calls_of(ws[1]), 2);
}

static void test_queue_leaves_no_subscription_behind_when_every_waiter_is_done(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    test_waiter *ws[5];
    /* two channels; each waiter ends another way: obtained, timed out, canceled */
    ws[0] = waiter_reset(0, "w:{gone-a}", "w:{gone-a}:ch", DLOCK_FOREVER, -1, &ops_wake_all);
    ws[1] = waiter_reset(1, "w:{gone-a}", "w:{gone-a}:ch", DLOCK_FOREVER, -1, &ops_wake_all);
    ws[2] = waiter_reset(2, "w:{gone-b}", "w:{gone-b}:ch", 400, -1, &ops_wake_one);
    ws[3] = waiter_reset(3, "w:{gone-b}", "w:{gone-b}:ch", DLOCK_FOREVER, -1, &ops_wake_one);
    ws[4] = waiter_reset(4, "w:{gone-b}", "w:{gone-b}:ch", DLOCK_FOREVER, 100, &ops_wake_one);
    start_waiters(w->c, ws, 5);
    bool ok = false;
    POLL_UNTIL(ok, subscribed_channels(w->f) == 2, test_slack_ms(1000));
    assert_true(ok);
    release(w->f, "w:{gone-a}", "w:{gone-a}:ch", NULL);
    cancel_waiters(w->c, ws + 3, 1);
    int64_t deadline = test_now_ms() + test_slack_ms(2000);
    POLL_UNTIL(ok, done_calls_of(ws[0]) + done_calls_of(ws[1]) + done_calls_of(ws[2]) == 3,
               deadline - test_now_ms());
    assert_true(ok);
    /* the last one, polling by its 100 ms hint, obtains once the key appears */
    set_key(w->f, "w:{gone-b}");
    POLL_UNTIL(ok, done_calls_of(ws[3]) + done_calls_of(ws[4]) == 2, test_slack_ms(2000));
    assert_true(ok);
    assert_int_equal(look(ws[0]).done_status, DLOCK_OK);
    assert_int_equal(look(ws[1]).done_status, DLOCK_OK);
    assert_int_equal(look(ws[2]).done_status, DLOCK_ETIMEDOUT);
    assert_int_equal(look(ws[3]).done_status, DLOCK_ECANCELED);
    assert_int_equal(look(ws[4]).done_status, DLOCK_OK);

    POLL_UNTIL(ok, subscribed_channels(w->f) == 0, test_slack_ms(3000)); /* as above */
    assert_true(ok);
    /* the client forgets a channel when the UNSUBSCRIBE's confirmation is read, which may
     * come after the server's count fell: its view is waited for too */
    core_view v;
    POLL_UNTIL(ok, (v = core_view_of(w->c), v.queues == 0 && v.channels == 0), test_slack_ms(3000));
    assert_int_equal(v.queues, 0);
    assert_int_equal(v.channels, 0);
}

static void test_client_free_ends_every_waiter_canceled_exactly_once(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    test_waiter *ws[5];
    ws[0] = waiter_reset(0, "w:{free-a}", "w:{free-a}:ch", DLOCK_FOREVER, -1, &ops_wake_one);
    ws[1] = waiter_reset(1, "w:{free-a}", "w:{free-a}:ch", DLOCK_FOREVER, -1, &ops_wake_one);
    ws[2] = waiter_reset(2, "w:{free-b}", "w:{free-b}:ch", 60000, 30000, &ops_wake_all);
    ws[3] = waiter_reset(3, "w:{free-b}", "w:{free-b}:ch", DLOCK_FOREVER, -1, &ops_wake_all);
    start_waiters(w->c, ws, 4);
    wait_settled(ws, 4, 2);
    /* and one whose first attempt is still out: the server answers nothing now */
    ws[4] = waiter_reset(4, "w:{free-c}", "w:{free-c}:ch", DLOCK_FOREVER, -1, &ops_wake_one);
    assert_int_equal(redis_fixture_pause(w->f), 0);
    start_waiters(w->c, ws + 4, 1);
    bool ok = false;
    POLL_UNTIL(ok, attempts_of(ws[4]) == 1, test_slack_ms(1000));
    assert_true(ok);
    assert_int_equal(look(ws[4]).replies, 0);

    dlock_client *c = w->c;
    w->c = NULL;
    assert_int_equal(dlock_client_free(c), DLOCK_OK);
    assert_int_equal(redis_fixture_resume(w->f), 0);
    for (int i = 0; i < 5; i++) {
        seen s = look(ws[i]);
        assert_int_equal(s.done_calls, 1);
        assert_int_equal(s.done_status, DLOCK_ECANCELED);
    }
    /* nobody subscribed is left on the server either */
    POLL_UNTIL(ok, subscribed_channels(w->f) == 0, test_slack_ms(3000));
    assert_true(ok);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_cancel_of_a_sleeping_waiter_ends_it_canceled_after_the_call_returns, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_cancel_during_an_attempt_waits_for_its_answer_and_keeps_a_success, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_queue_leaves_no_subscription_behind_when_every_waiter_is_done, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client_free_ends_every_waiter_canceled_exactly_once,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
