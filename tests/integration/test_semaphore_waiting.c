/* SPDX-License-Identifier: MIT */
/* test_semaphore_waiting.c — the semaphore tests of test_semaphore.c, split from it by concern:
 * waking and waiting; arrival order. Helpers: tests/support/semaphore_helpers.h. Every test starts
 * its own server. */
#include "semaphore_helpers.h"
#include "wake_count.h"

/* ---- waking and waiting ------------------------------------------------------------------ */

/* rounds x: a thread of client `wc` waits for 1 permit of an empty semaphore (`waiting`); the
 * test thread releases 1 through `releasing`. The waiter must not return before the release
 * starts, and must be woken by the release's message (not its re-check: wake_count.h). */
static void expect_woken_by_release(redis_fixture *f, dlock_client *wc, dlock_semaphore *waiting,
                                    dlock_semaphore *releasing, const char *channel,
                                    const char *what) {
    const int rounds = 5;
    int64_t worst_us = INT64_MIN, total_us = 0;
    for (int i = 0; i < rounds; i++) {
        waiter w = {.s = waiting, .permits = 1, .wait_ms = test_slack_ms(10000)};
        int64_t began_ms = test_now_ms();
        start_waiter_and_let_it_sleep(f, channel, &w, 1, 2);
        test_sleep_ms(20);
        assert_false(blocking_call_returned(&w.call));
        uint64_t wakes_before = client_wakes(wc);
        int64_t release_start_us = test_now_us();
        ASSERT_RC(dlock_semaphore_release(releasing, 1), DLOCK_OK);
        int64_t release_end_us = test_now_us();
        ASSERT_RC(blocking_call_join(&w.call), DLOCK_OK);
        assert_true(w.call.returned_us >= release_start_us);
        int64_t latency_us = w.call.returned_us - release_end_us;
        ASSERT_BETWEEN(latency_us / 1000, -test_prompt_ms(), test_prompt_ms());
        assert_true(let_in_by_a_message(wc, wakes_before, began_ms, w.call.returned_us / 1000));
        if (latency_us > worst_us)
            worst_us = latency_us;
        total_us += latency_us;
        assert_int_equal(available_of(releasing), 0);
    }
    printf("# release (%s) -> waiting acquire returns: mean %.2f ms, worst %.2f ms (%d rounds)\n",
           what, (double)total_us / rounds / 1000.0, (double)worst_us / 1000.0, rounds);
}

static void
test_waiting_acquire_is_woken_by_the_message_of_a_release_by_another_client(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_client *b = connect_client(f);
    dlock_semaphore *sa = new_semaphore(a, "woken");
    dlock_semaphore *sb = new_semaphore(b, "woken");
    expect_woken_by_release(f, a, sa, sb, "redisson_sc:{woken}", "another client");
    dlock_semaphore_free(sa);
    dlock_semaphore_free(sb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

static void
test_waiting_acquire_is_woken_by_the_message_of_a_release_by_another_thread_of_its_client(
    void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_semaphore *sa = new_semaphore(a, "woken-here");
    expect_woken_by_release(f, a, sa, sa, "redisson_sc:{woken-here}", "same client");
    dlock_semaphore_free(sa);
    dlock_client_free(a);
    redis_fixture_stop(f);
}

static void
test_try_acquire_4_returns_after_the_second_of_two_releases_of_2_not_before(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_client *b = connect_client(f);
    dlock_semaphore *sa = new_semaphore(a, "four");
    dlock_semaphore *sb = new_semaphore(b, "four");
    waiter w = {.s = sa, .permits = 4, .wait_ms = test_slack_ms(10000)};
    int64_t start_us = test_now_us();
    start_waiter_and_let_it_sleep(f, "redisson_sc:{four}", &w, 1, 2);
    test_sleep_ms(300);
    assert_false(blocking_call_returned(&w.call));
    ASSERT_RC(dlock_semaphore_release(sb, 2), DLOCK_OK);
    int64_t first_us = test_now_us();
    test_sleep_ms(300);
    assert_false(blocking_call_returned(&w.call)); /* 2 of 4: it keeps waiting */
    assert_int_equal(redis_fixture_int(f, "GET four"), 2);
    uint64_t wakes_before = client_wakes(a);
    int64_t second_start_us = test_now_us();
    ASSERT_RC(dlock_semaphore_release(sb, 2), DLOCK_OK);
    int64_t second_end_us = test_now_us();
    ASSERT_RC(blocking_call_join(&w.call), DLOCK_OK);
    assert_true(w.call.returned_us >= second_start_us);
    int64_t latency_ms = (w.call.returned_us - second_end_us) / 1000;
    ASSERT_BETWEEN(latency_ms, -test_prompt_ms(), test_prompt_ms());
    /* by the second message, not a re-check */
    assert_true(let_in_by_a_message(a, wakes_before, start_us / 1000, w.call.returned_us / 1000));
    assert_int_equal(available_of(sa), 0);
    printf("# try_acquire(4): first release of 2 at %lld ms, returned %lld ms after the second "
           "(%lld ms after its start)\n",
           (long long)((first_us - start_us) / 1000), (long long)latency_ms,
           (long long)((w.call.returned_us - start_us) / 1000));
    dlock_semaphore_free(sa);
    dlock_semaphore_free(sb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

static void test_try_acquire_without_permits_times_out_at_its_deadline_not_before(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_semaphore *s = new_semaphore(c, "short");
    ASSERT_RC(dlock_semaphore_try_set_permits(s, 2, NULL), DLOCK_OK);
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_semaphore_try_acquire(s, 3, 300), DLOCK_ETIMEDOUT);
    int64_t took = test_now_ms() - start;
    assert_true(strlen(dlock_last_error()) > 0);
    ASSERT_BETWEEN(took, 300, 300 + test_prompt_ms());
    start = test_now_ms();
    ASSERT_RC(dlock_semaphore_try_acquire(s, 3, 0), DLOCK_ETIMEDOUT);
    int64_t once = test_now_ms() - start;
    ASSERT_BETWEEN(once, 0, test_prompt_ms()); /* it returns: wait 0 never sleeps */
    assert_int_equal(available_of(s), 2);      /* nothing was taken by the failed tries */
    printf("# try_acquire(300 ms) timed out after %lld ms; wait 0 after %lld ms\n", (long long)took,
           (long long)once);
    dlock_semaphore_free(s);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_waiter_sends_a_handful_of_commands_during_a_1500_ms_wait(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_semaphore *s = new_semaphore(c, "quiet");
    const char *channel = "redisson_sc:{quiet}";
    /* a first short wait opens the subscriber connection, so its handshake is not counted */
    ASSERT_RC(dlock_semaphore_try_acquire(s, 1, 100), DLOCK_ETIMEDOUT);
    bool gone = false;
    POLL_UNTIL(gone, numsub(f, channel) == 0, test_slack_ms(1000));
    assert_true(gone);

    long long scripts_before = script_calls(f); /* INFO #1 */
    long long total_before = total_commands(f); /* INFO #2 */
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_semaphore_try_acquire(s, 1, 1500), DLOCK_ETIMEDOUT);
    int64_t took = test_now_ms() - start;
    test_sleep_ms(200);                                     /* the UNSUBSCRIBE lands */
    long long total = total_commands(f) - total_before - 1; /* INFO #2 itself */
    long long scripts = script_calls(f) - scripts_before;
    ASSERT_BETWEEN(took, 1500, 1500 + test_prompt_ms());
    assert_int_equal(numsub(f, channel), 0);
    /* 3 attempts (at once, once subscribed, at the deadline; each an EVALSHA that runs a GET
     * inside), SUBSCRIBE, UNSUBSCRIBE: polling every few ms would be hundreds */
    printf("# 1500 ms wait: %lld script calls, total_commands_processed +%lld "
           "(in-script commands included, the test's INFO calls not)\n",
           scripts, total);
    ASSERT_BETWEEN(scripts, 2, 3);
    ASSERT_BETWEEN(total, 4, 10);
    dlock_semaphore_free(s);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- arrival order within a client ------------------------------------------------------- */

static void
test_releases_of_1_serve_a_waiter_needing_3_before_a_later_waiter_needing_1_of_its_client(
    void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_client *b = connect_client(f);
    dlock_semaphore *sa = new_semaphore(a, "fifo");
    dlock_semaphore *sb = new_semaphore(b, "fifo");
    const char *channel = "redisson_sc:{fifo}";
    waiter three = {.s = sa, .permits = 3, .wait_ms = test_slack_ms(20000)};
    waiter one = {.s = sa, .permits = 1, .wait_ms = test_slack_ms(20000)};
    start_waiter_and_let_it_sleep(f, channel, &three, 1, 2);
    /* the second waiter finds the subscription confirmed: one attempt, then it sleeps */
    int64_t one_began_ms = test_now_ms();
    start_waiter_and_let_it_sleep(f, channel, &one, 1, 1);
    test_sleep_ms(50);
    for (int i = 1; i <= 2; i++) {
        ASSERT_RC(dlock_semaphore_release(sb, 1), DLOCK_OK);
        test_sleep_ms(200);
        if (blocking_call_returned(&one.call))
            fail_msg("the waiter needing 1 took a permit after release #%d, before the waiter "
                     "needing 3 (rc %s)",
                     i, dlock_err_name(one.call.rc));
        assert_false(blocking_call_returned(&three.call));
        assert_int_equal(redis_fixture_int(f, "GET fifo"), i);
    }
    int64_t third_start_us = test_now_us();
    ASSERT_RC(dlock_semaphore_release(sb, 1), DLOCK_OK);
    ASSERT_RC(blocking_call_join(&three.call), DLOCK_OK);
    assert_true(three.call.returned_us >= third_start_us);
    test_sleep_ms(200);
    assert_false(blocking_call_returned(&one.call)); /* the 3 permits went to the first waiter */
    assert_int_equal(redis_fixture_int(f, "GET fifo"), 0);
    uint64_t wakes_before = client_wakes(a);
    int64_t fourth_start_us = test_now_us();
    ASSERT_RC(dlock_semaphore_release(sb, 1), DLOCK_OK);
    ASSERT_RC(blocking_call_join(&one.call), DLOCK_OK);
    assert_true(one.call.returned_us >= fourth_start_us);
    ASSERT_BETWEEN((one.call.returned_us - fourth_start_us) / 1000, 0, test_prompt_ms());
    /* by the message, not a re-check */
    assert_true(let_in_by_a_message(a, wakes_before, one_began_ms, one.call.returned_us / 1000));
    assert_int_equal(redis_fixture_int(f, "GET fifo"), 0);
    dlock_semaphore_free(sa);
    dlock_semaphore_free(sb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

/* When the waiter at the head gives up, the permits that did not fit it may fit the
 * waiters it kept asleep behind it: they must not sleep on until their 5 s recheck
 * (wait.c: "A waiter that leaves now hands its wake ... for a semaphore it may have been
 * the larger request that kept a smaller one asleep"). */
static void test_waiter_needing_1_gets_a_free_permit_when_the_waiter_ahead_times_out(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_client *b = connect_client(f);
    dlock_semaphore *sa = new_semaphore(a, "fifo-gone");
    dlock_semaphore *sb = new_semaphore(b, "fifo-gone");
    const char *channel = "redisson_sc:{fifo-gone}";
    waiter three = {.s = sa, .permits = 3, .wait_ms = 1000};
    waiter one = {.s = sa, .permits = 1, .wait_ms = test_slack_ms(20000)};
    int64_t three_start_us = test_now_us();
    start_waiter_and_let_it_sleep(f, channel, &three, 1, 2);
    int64_t one_start_us = test_now_us();
    start_waiter_and_let_it_sleep(f, channel, &one, 1, 1);
    ASSERT_RC(dlock_semaphore_release(sb, 1), DLOCK_OK); /* fits the second, not the first */
    blocking_call_join(&three.call);
    blocking_call_join(&one.call);
    int64_t after_ms = (one.call.returned_us - three.call.returned_us) / 1000;
    /* one's re-check comes TEST_RECHECK_MS after its last attempt at the earliest, three's
     * deadline at most 1000 ms after one started */
    int64_t one_in_ms = (one.call.returned_us - one_start_us) / 1000;
    int64_t not_before_ms = (three_start_us + 1000 * 1000 - one_start_us) / 1000 - 2; /* whole ms */
    int rc3 = three.call.rc, rc1 = one.call.rc;
    dlock_semaphore_free(sa);
    dlock_semaphore_free(sb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
    ASSERT_RC(rc3, DLOCK_ETIMEDOUT);
    ASSERT_RC(rc1, DLOCK_OK);
    printf("# the waiter needing 1 got the free permit %lld ms after the one ahead timed out\n",
           (long long)after_ms);
    /* not before three's deadline (three keeps it asleep until then), and handed on, not
     * found by its re-check: seconds of room either way on a loaded machine */
    ASSERT_BETWEEN(one_in_ms, not_before_ms, TEST_RECHECK_MS - 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_waiting_acquire_is_woken_by_the_message_of_a_release_by_another_client),
        cmocka_unit_test(
            test_waiting_acquire_is_woken_by_the_message_of_a_release_by_another_thread_of_its_client),
        cmocka_unit_test(
            test_try_acquire_4_returns_after_the_second_of_two_releases_of_2_not_before),
        cmocka_unit_test(test_try_acquire_without_permits_times_out_at_its_deadline_not_before),
        cmocka_unit_test(test_waiter_sends_a_handful_of_commands_during_a_1500_ms_wait),
        cmocka_unit_test(
            test_releases_of_1_serve_a_waiter_needing_3_before_a_later_waiter_needing_1_of_its_client),
        cmocka_unit_test(test_waiter_needing_1_gets_a_free_permit_when_the_waiter_ahead_times_out),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
