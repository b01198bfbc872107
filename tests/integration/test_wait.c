/* SPDX-License-Identifier: MIT */
/* test_wait.c — the waiting engine (src/core/engine/wait.c) against a real redis-server.
 *
 * A test waiter stands in for a primitive: its object is "free" when a key exists, so an
 * attempt is `EXISTS key` (1: obtained; 0: DLOCK__BUSY with the waiter's hint), and a
 * release is `SET key` + `PUBLISH channel` made by the test through the fixture. Counting
 * attempts and reading the server's INFO proves what the engine promises: a busy waiter
 * sleeps until a message or its hint, it never polls, a message wakes as many waiters as
 * wake_count says, a wake a waiter cannot use goes to the next sleeper, cancel and
 * dlock_client_free end every waiter exactly once, and nothing stays subscribed.
 *
 * Waiters live on the client's loop thread and in static storage (a failed assert leaves
 * nothing dangling for the teardown that frees the client); the test thread starts and
 * cancels them through a small dlock__op (on_loop) and polls what their callbacks record
 * under a mutex.
 *
 * Split by concern: sleeping and waking here; wake counts and hand-offs in
 * test_wait_wakes.c, cancel and the end of a queue in test_wait_cancel.c. Helpers:
 * tests/support/wait_helpers.h. */
#include "wait_helpers.h"

/* ---- sleeping and waking -------------------------------------------------------------------- */

static void test_busy_waiter_without_a_hint_sleeps_until_a_publish_wakes_it(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    test_waiter *t = waiter_reset(0, "w:{wake}", "w:{wake}:ch", DLOCK_FOREVER, -1, &ops_wake_one);
    start_waiters(w->c, &t, 1);
    wait_settled(&t, 1, 2); /* the first try, and one once subscribed */
    assert_int_equal(attempts_of(t), 2);

    /* asleep: nothing happens while nothing is published (a fixed window: nothing may
     * happen during it) */
    test_sleep_ms(300);
    assert_int_equal(attempts_of(t), 2);
    assert_int_equal(done_calls_of(t), 0);

    /* no hint and no deadline: only the message can end this sleep, so the bound is
     * generous (seconds) and still proves the wake */
    int64_t freed_at;
    release(w->f, t->key, t->channel, &freed_at);
    bool ok = false;
    POLL_UNTIL(ok, done_calls_of(t) == 1, test_prompt_ms());
    assert_true(ok);
    seen s = look(t);
    assert_int_equal(s.done_status, DLOCK_OK);
    assert_int_equal(s.attempts, 3);
    assert_int_equal(s.woken_attempts, 1);
    int64_t took = s.done_ms - freed_at;
    assert_true(took >= 0);
    assert_true(took <= test_prompt_ms());
    printf("# obtained %lld ms after the key appeared and the message went out\n", (long long)took);
}

static void test_wait_zero_makes_one_attempt_and_times_out_without_subscribing(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    long long subscribes_before = subscribe_calls(w->f);
    test_waiter *t = waiter_reset(0, "w:{zero}", "w:{zero}:ch", 0, 30000, &ops_wake_one);
    start_waiters(w->c, &t, 1);
    bool ok = false;
    POLL_UNTIL(ok, done_calls_of(t) == 1, test_slack_ms(1000));
    assert_true(ok);
    test_sleep_ms(50); /* a fixed window: no second done call and no attempt more */
    seen s = look(t);
    assert_int_equal(s.done_calls, 1);
    assert_int_equal(s.done_status, DLOCK_ETIMEDOUT);
    assert_int_equal(s.attempts, 1);
    assert_int_equal(subscribe_calls(w->f), subscribes_before);
    assert_int_equal(subscribed_channels(w->f), 0);
    core_view v = core_view_of(w->c);
    assert_int_equal(v.queues, 0);
    assert_int_equal(v.channels, 0);
    assert_int_equal(v.subscriber_state, LINK_IDLE); /* not even connected */

    /* and when the object is free, wait 0 obtains it with that one attempt */
    set_key(w->f, "w:{zero}");
    t = waiter_reset(1, "w:{zero}", "w:{zero}:ch", 0, 30000, &ops_wake_one);
    start_waiters(w->c, &t, 1);
    POLL_UNTIL(ok, done_calls_of(t) == 1, test_slack_ms(1000));
    assert_true(ok);
    assert_int_equal(look(t).done_status, DLOCK_OK);
    assert_int_equal(look(t).attempts, 1);
}

static void test_wait_on_an_object_never_freed_times_out_at_its_deadline_not_before(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    /* the holder's lease says TEST_SLOW_MS: only the 300 ms deadline can end this wait
     * within test_prompt_ms() */
    test_waiter *t = waiter_reset(0, "w:{held}", "w:{held}:ch", 300, TEST_SLOW_MS, &ops_wake_one);
    int64_t t0 = test_now_ms();
    start_waiters(w->c, &t, 1);
    bool ok = false;
    POLL_UNTIL(ok, done_calls_of(t) == 1, 300 + test_prompt_ms());
    assert_true(ok);
    seen s = look(t);
    assert_int_equal(s.done_status, DLOCK_ETIMEDOUT);
    assert_true(s.done_ms - s.started_ms >= 300); /* never early */
    int64_t took = s.done_ms - t0;
    assert_true(took <= 300 + test_prompt_ms());
    /* the first try, one once subscribed, one at the deadline */
    assert_int_equal(s.attempts, 3);
    printf("# timed out after %lld ms\n", (long long)took);
}

static void test_waiting_without_a_hint_does_not_poll_the_server(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    test_waiter *t = waiter_reset(0, "w:{quiet}", "w:{quiet}:ch", 1500, -1, &ops_wake_one);
    long long before = commands_but_info(w->f);
    long long unsubscribes = command_calls(w->f, "unsubscribe");
    start_waiters(w->c, &t, 1);
    bool ok = false;
    POLL_UNTIL(ok, done_calls_of(t) == 1, 1500 + test_prompt_ms());
    assert_true(ok);
    /* the UNSUBSCRIBE has landed */
    POLL_UNTIL(ok, command_calls(w->f, "unsubscribe") > unsubscribes, test_slack_ms(1000));
    assert_true(ok);
    long long after = commands_but_info(w->f);
    seen s = look(t);
    assert_int_equal(s.done_status, DLOCK_ETIMEDOUT);
    assert_true(s.done_ms - s.started_ms >= 1500);
    assert_true(s.attempts <= 3);
    /* 3 EXISTS + SUBSCRIBE + UNSUBSCRIBE */
    long long ours = after - before;
    assert_true(ours >= s.attempts); /* the count does see the attempts */
    assert_true(ours <= 6);
    printf("# 1.5 s wait: %d attempts, %lld commands on the server\n", s.attempts, ours);
}

static void test_lost_message_costs_one_hint_then_the_waiter_obtains(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    /* a hint that outlasts the setup on a loaded machine, so the key surely appears before
     * the retry; the deadline is far beyond hint + test_prompt_ms(), so only the hint can
     * bring the waiter back in time */
    const int64_t hint = test_slack_ms(1000);
    test_waiter *t =
        waiter_reset(0, "w:{lost}", "w:{lost}:ch", 2 * TEST_SLOW_MS, hint, &ops_wake_one);
    start_waiters(w->c, &t, 1);
    bool ok = false;
    POLL_UNTIL(ok, look(t).replies == 2, test_slack_ms(2000));
    assert_true(ok);
    /* freed, but the message is lost: only the hint brings the waiter back */
    set_key(w->f, t->key);
    assert_int_equal(attempts_of(t), 2); /* the key appeared before the retry */
    POLL_UNTIL(ok, done_calls_of(t) == 1, hint + test_prompt_ms());
    assert_true(ok);
    pthread_mutex_lock(&mu);
    int64_t slept = t->attempt_ms[2] - t->reply_ms[1];
    pthread_mutex_unlock(&mu);
    seen s = look(t);
    assert_int_equal(s.done_status, DLOCK_OK);
    assert_int_equal(s.attempts, 3);
    assert_true(slept >= hint - 1); /* the hint, not sooner (ms clock granularity) */
    assert_true(slept <= hint + test_prompt_ms());
    printf("# retried %lld ms after the busy answer (hint %lld ms)\n", (long long)slept,
           (long long)hint);
}

static void test_message_during_an_attempt_makes_the_busy_waiter_try_again_not_sleep(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    test_waiter *t = waiter_reset(0, "w:{race}", "w:{race}:ch", DLOCK_FOREVER, -1, &ops_wake_one);
    long long exists_before = command_calls(w->f, "exists");
    start_waiters(w->c, &t, 1);
    wait_settled(&t, 1, 2);
    /* from now on every answer reaches the engine race_hold_ms() after the server gave it */
    on_loop(w->c, set_hold, t);
    redisReply *r = redis_fixture_cmd(w->f, "PUBLISH %s %s", "w:{race}:ch", "not-yet");
    assert_non_null(r);
    freeReplyObject(r);
    bool ok = false;
    /* the attempt ran on the server and found it busy (its EXISTS is the third); before
     * that answer is in, the object is freed and the message arrives: the waiter must not
     * go to sleep on the stale "busy" */
    POLL_UNTIL(ok, command_calls(w->f, "exists") >= exists_before + 3, test_slack_ms(1000));
    assert_true(ok);
    assert_int_equal(look(t).replies, 2);
    release(w->f, t->key, t->channel, NULL);
    /* the release came while "busy" was held back: the case under test */
    assert_int_equal(look(t).replies, 2);
    POLL_UNTIL(ok, done_calls_of(t) == 1, 2 * race_hold_ms() + test_slack_ms(1000));
    assert_true(ok);
    seen s = look(t);
    assert_int_equal(s.done_status, DLOCK_OK);
    assert_int_equal(s.attempts, 4);
}

static void test_waiters_attempt_again_when_their_killed_subscription_comes_back(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    test_waiter *ws[2];
    ws[0] = waiter_reset(0, "w:{outage}", "w:{outage}:ch", DLOCK_FOREVER, -1, &ops_wake_one);
    ws[1] = waiter_reset(1, "w:{outage}", "w:{outage}:ch", DLOCK_FOREVER, -1, &ops_wake_one);
    start_waiters(w->c, ws, 2);
    wait_settled(ws, 2, 2);
    /* freed, but its message is lost (as it would be while the subscription is down):
     * the waiters sleep on */
    set_key(w->f, "w:{outage}");
    test_sleep_ms(100); /* a fixed window: nobody looks again without a message */
    assert_int_equal(attempts_of(ws[0]) + attempts_of(ws[1]), 4);
    /* the subscription drops and comes back: every waiter looks again (even with
     * wake_count 1, as nothing was said) */
    assert_int_equal(redis_fixture_client_kill_type(w->f, "pubsub"), 1);
    bool ok = false;
    POLL_UNTIL(ok, done_calls_of(ws[0]) == 1 && done_calls_of(ws[1]) == 1, test_slack_ms(3000));
    assert_true(ok);
    assert_int_equal(look(ws[0]).done_status, DLOCK_OK);
    assert_int_equal(look(ws[1]).done_status, DLOCK_OK);
    assert_int_equal(look(ws[0]).attempts, 3);
    assert_int_equal(look(ws[1]).attempts, 3);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_busy_waiter_without_a_hint_sleeps_until_a_publish_wakes_it, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_wait_zero_makes_one_attempt_and_times_out_without_subscribing, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_wait_on_an_object_never_freed_times_out_at_its_deadline_not_before, setup,
            teardown),
        cmocka_unit_test_setup_teardown(test_waiting_without_a_hint_does_not_poll_the_server, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_lost_message_costs_one_hint_then_the_waiter_obtains,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_message_during_an_attempt_makes_the_busy_waiter_try_again_not_sleep, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_waiters_attempt_again_when_their_killed_subscription_comes_back, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
