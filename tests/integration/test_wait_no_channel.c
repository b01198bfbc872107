/* SPDX-License-Identifier: MIT */
/* test_wait_no_channel.c — the waiting engine (src/core/engine/wait.c) for an object that
 * publishes nothing (channel NULL, as the spin lock waits), against a real redis-server.
 *
 * The test waiter of tests/support/wait_helpers.h stands in for the primitive: its object
 * is free while a key exists, an attempt is `EXISTS key`, and "busy" carries the waiter's
 * hint, the delay before its next attempt. Without a channel the engine must subscribe to
 * nothing, attempt again only when the hint or the deadline comes, and still end the wait
 * exactly once on cancel and when the client closes. */
#include "wait_helpers.h"

static void test_wait_without_a_channel_attempts_at_each_hint_and_never_subscribes(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    const int64_t hint = 40;
    long long subscribes_before = subscribe_calls(w->f);
    /* the deadline is far beyond test_prompt_ms(): only the next hint can end the wait in
     * time once the key is there */
    test_waiter *t = waiter_reset(0, "nc:{hint}", NULL, 2 * TEST_SLOW_MS, hint, &ops_wake_one);
    start_waiters(w->c, &t, 1);
    bool ok = false;
    POLL_UNTIL(ok, attempts_of(t) >= 4, test_slack_ms(2000));
    assert_true(ok);

    int64_t freed_at = test_now_ms();
    set_key(w->f, t->key);
    POLL_UNTIL(ok, done_calls_of(t) == 1, hint + test_prompt_ms());
    assert_true(ok);
    seen s = look(t);
    assert_int_equal(s.done_status, DLOCK_OK);
    assert_true(test_now_ms() - freed_at <= hint + test_prompt_ms()); /* the next hint */

    /* paced by the hint: every attempt comes at least a hint after the one before */
    pthread_mutex_lock(&mu);
    int n = t->attempts < MAX_TRACE ? t->attempts : MAX_TRACE;
    for (int i = 1; i < n; i++)
        assert_true(t->attempt_ms[i] - t->attempt_ms[i - 1] >= hint);
    pthread_mutex_unlock(&mu);

    assert_int_equal(subscribe_calls(w->f), subscribes_before);
    core_view v = core_view_of(w->c);
    assert_int_equal(v.queues, 0);
    assert_int_equal(v.channels, 0);
    assert_int_equal(v.subscriber_state, LINK_IDLE); /* not even connected */
    printf("# %d attempts, %lld ms after the key appeared\n", s.attempts,
           (long long)(s.done_ms - freed_at));
}

static void test_wait_without_a_channel_times_out_at_its_deadline(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    test_waiter *t = waiter_reset(0, "nc:{held}", NULL, 300, 100, &ops_wake_one);
    int64_t t0 = test_now_ms();
    start_waiters(w->c, &t, 1);
    bool ok = false;
    POLL_UNTIL(ok, done_calls_of(t) == 1, 300 + test_prompt_ms());
    assert_true(ok);
    seen s = look(t);
    assert_int_equal(s.done_status, DLOCK_ETIMEDOUT);
    assert_true(s.done_ms - s.started_ms >= 300);          /* never early */
    assert_true(s.done_ms - t0 <= 300 + test_prompt_ms()); /* it ends: a hang fails here */
    /* the first, one per hint, one at the deadline */
    assert_true(s.attempts >= 2);
    assert_true(s.attempts <= 300 / 100 + 2);
}

static void test_wait_without_a_channel_or_a_hint_attempts_at_its_start_and_deadline(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    test_waiter *t = waiter_reset(0, "nc:{nohint}", NULL, 300, -1, &ops_wake_one);
    start_waiters(w->c, &t, 1);
    bool ok = false;
    POLL_UNTIL(ok, done_calls_of(t) == 1, test_slack_ms(2000));
    assert_true(ok);
    seen s = look(t);
    assert_int_equal(s.done_status, DLOCK_ETIMEDOUT);
    assert_int_equal(s.attempts, 2); /* DLOCK__RECHECK_MS is far beyond the deadline */
}

static void test_cancel_ends_a_wait_without_a_channel_once(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    test_waiter *t = waiter_reset(0, "nc:{cancel}", NULL, DLOCK_FOREVER, 1000, &ops_wake_one);
    start_waiters(w->c, &t, 1);
    wait_settled(&t, 1, 1);
    cancel_waiters(w->c, &t, 1);
    bool ok = false;
    POLL_UNTIL(ok, done_calls_of(t) == 1, test_slack_ms(2000));
    assert_true(ok);
    seen s = look(t);
    assert_int_equal(s.done_status, DLOCK_ECANCELED);
    assert_false(s.done_inside_cancel); /* never from inside the call that canceled */
    test_sleep_ms(50);
    assert_int_equal(done_calls_of(t), 1);
}

static void test_closing_the_client_ends_a_wait_without_a_channel_with_ecanceled(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    test_waiter *t = waiter_reset(0, "nc:{close}", NULL, DLOCK_FOREVER, 1000, &ops_wake_one);
    start_waiters(w->c, &t, 1);
    wait_settled(&t, 1, 1);
    assert_int_equal(dlock_client_free(w->c), DLOCK_OK);
    w->c = NULL;
    /* the close ran on the loop thread, which the free joined */
    seen s = look(t);
    assert_int_equal(s.done_calls, 1);
    assert_int_equal(s.done_status, DLOCK_ECANCELED);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_wait_without_a_channel_attempts_at_each_hint_and_never_subscribes, setup,
            teardown),
        cmocka_unit_test_setup_teardown(test_wait_without_a_channel_times_out_at_its_deadline,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_wait_without_a_channel_or_a_hint_attempts_at_its_start_and_deadline, setup,
            teardown),
        cmocka_unit_test_setup_teardown(test_cancel_ends_a_wait_without_a_channel_once, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_closing_the_client_ends_a_wait_without_a_channel_with_ecanceled, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
