/* SPDX-License-Identifier: MIT */
/* test_latch.c — the count-down latch (Redisson RCountDownLatch) of src/semaphore/latch.c
 * against a real redis-server: counting down and awaiting. Its layout and lost messages:
 * test_latch_layout.c; bad input and the async face: test_latch_async.c.
 *
 * What is proven: await returns within 100 ms of the last of three count downs made by
 * other threads, and not before it; await's time bound; try_set_count only on an unset or
 * finished latch; count; counting down a finished latch changes nothing.
 *
 * Every test starts its own server. */
#include "latch_helpers.h"
#include "wake_count.h"

/* ---- count down and await ---------------------------------------------------------------- */

typedef struct counter {
    dlock_latch *l;
    int64_t delay_ms;
    int rc;
    int64_t start_us, end_us;
} counter;

static void *count_down_later(void *arg) {
    counter *k = arg;
    test_sleep_ms(k->delay_ms);
    k->start_us = test_now_us();
    k->rc = dlock_latch_count_down(k->l);
    k->end_us = test_now_us();
    return NULL;
}

static void test_await_is_woken_by_the_third_count_down_by_three_threads(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_client *b = connect_client(f);
    dlock_latch *la = new_latch(a, "three");
    dlock_latch *lb = new_latch(b, "three");
    bool was_set = false;
    ASSERT_RC(dlock_latch_try_set_count(la, 3, &was_set), DLOCK_OK);
    assert_true(was_set);
    awaiter w = {.l = la, .wait_ms = test_slack_ms(10000)};
    int64_t began_ms = test_now_ms();
    start_awaiter_and_let_it_sleep(f, "redisson_countdownlatch__channel__{three}", &w);
    uint64_t wakes_before = client_wakes(a);
    counter k[3];
    pthread_t kt[3];
    for (int i = 0; i < 3; i++) {
        k[i] = (counter){.l = lb, .delay_ms = 150 * (i + 1)};
        assert_int_equal(pthread_create(&kt[i], NULL, count_down_later, &k[i]), 0);
    }
    for (int i = 0; i < 3; i++)
        assert_int_equal(pthread_join(kt[i], NULL), 0);
    ASSERT_RC(blocking_call_join(&w.call), DLOCK_OK);
    int64_t last_start_us = 0, last_end_us = 0;
    for (int i = 0; i < 3; i++) {
        ASSERT_RC(k[i].rc, DLOCK_OK);
        if (k[i].start_us > last_start_us)
            last_start_us = k[i].start_us;
        if (k[i].end_us > last_end_us)
            last_end_us = k[i].end_us;
    }
    assert_true(w.call.returned_us >= last_start_us); /* not before the third */
    int64_t latency_us = w.call.returned_us - last_end_us;
    ASSERT_BETWEEN(latency_us / 1000, -test_prompt_ms(), test_prompt_ms());
    /* let in by the message of the count down to 0, not its re-check (wake_count.h) */
    assert_true(let_in_by_a_message(a, wakes_before, began_ms, w.call.returned_us / 1000));
    assert_int_equal(count_of(la), 0);
    assert_int_equal(redis_fixture_int(f, "EXISTS three"), 0);
    printf("# await returned %.2f ms after the third count down ended\n",
           (double)latency_us / 1000.0);
    dlock_latch_free(la);
    dlock_latch_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

static void test_await_on_a_counting_latch_times_out_at_its_deadline_not_before(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_latch *l = new_latch(c, "slow");
    ASSERT_RC(dlock_latch_try_set_count(l, 1, NULL), DLOCK_OK);
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_latch_await(l, 300), DLOCK_ETIMEDOUT);
    int64_t took = test_now_ms() - start;
    assert_true(strlen(dlock_last_error()) > 0);
    ASSERT_BETWEEN(took, 300, 300 + test_prompt_ms());
    start = test_now_ms();
    ASSERT_RC(dlock_latch_await(l, 0), DLOCK_ETIMEDOUT);
    int64_t once = test_now_ms() - start;
    ASSERT_BETWEEN(once, 0, test_prompt_ms()); /* it returns: wait 0 never sleeps */
    assert_int_equal(count_of(l), 1);
    printf("# await(300 ms) timed out after %lld ms; await(0) after %lld ms\n", (long long)took,
           (long long)once);
    dlock_latch_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_await_on_an_unset_or_finished_latch_returns_at_once(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_latch *l = new_latch(c, "done");
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_latch_await(l, 0), DLOCK_OK);
    ASSERT_RC(dlock_latch_await(l, DLOCK_FOREVER), DLOCK_OK);
    ASSERT_RC(dlock_latch_try_set_count(l, 1, NULL), DLOCK_OK);
    ASSERT_RC(dlock_latch_count_down(l), DLOCK_OK);
    ASSERT_RC(dlock_latch_await(l, DLOCK_FOREVER), DLOCK_OK);
    /* a wait FOREVER that did sleep would never return: numsub proves it did not subscribe */
    ASSERT_BETWEEN(test_now_ms() - start, 0, test_prompt_ms());
    assert_int_equal(numsub(f, "redisson_countdownlatch__channel__{done}"), 0); /* no wait */
    dlock_latch_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- set, count, count down -------------------------------------------------------------- */

static void test_try_set_count_sets_only_an_unset_or_finished_latch(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_latch *l = new_latch(c, "reset");
    bool was_set = false;
    ASSERT_RC(dlock_latch_try_set_count(l, 2, &was_set), DLOCK_OK);
    assert_true(was_set);
    ASSERT_RC(dlock_latch_try_set_count(l, 5, &was_set), DLOCK_OK);
    assert_false(was_set); /* still counting: 0 */
    assert_int_equal(count_of(l), 2);
    ASSERT_RC(dlock_latch_count_down(l), DLOCK_OK);
    was_set = true;
    ASSERT_RC(dlock_latch_try_set_count(l, 5, &was_set), DLOCK_OK);
    assert_false(was_set);
    assert_int_equal(count_of(l), 1);
    ASSERT_RC(dlock_latch_count_down(l), DLOCK_OK);
    ASSERT_RC(dlock_latch_try_set_count(l, 1, &was_set), DLOCK_OK);
    assert_true(was_set); /* finished: 1 */
    assert_int_equal(count_of(l), 1);
    ASSERT_RC(dlock_latch_try_set_count(l, 1, NULL), DLOCK_OK); /* was_set may be NULL */
    assert_int_equal(count_of(l), 1);
    /* 0 "sets" a latch that is at zero already: nothing is written */
    dlock_latch *z = new_latch(c, "zero");
    ASSERT_RC(dlock_latch_try_set_count(z, 0, &was_set), DLOCK_OK);
    assert_true(was_set);
    assert_int_equal(redis_fixture_int(f, "EXISTS zero"), 0);
    assert_int_equal(count_of(z), 0);
    dlock_latch_free(z);
    dlock_latch_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_count_is_the_remaining_count_and_0_when_unset_or_finished(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_latch *l = new_latch(c, "counted");
    int64_t seen[5];
    seen[0] = count_of(l);
    ASSERT_RC(dlock_latch_try_set_count(l, 3, NULL), DLOCK_OK);
    seen[1] = count_of(l);
    for (int i = 2; i < 5; i++) {
        ASSERT_RC(dlock_latch_count_down(l), DLOCK_OK);
        seen[i] = count_of(l);
    }
    const int64_t want[5] = {0, 3, 2, 1, 0};
    for (int i = 0; i < 5; i++)
        if (seen[i] != want[i])
            fail_msg("count #%d = %lld, expected %lld", i, (long long)seen[i], (long long)want[i]);
    /* a count written by another client (Redisson) is what count reads */
    freeReplyObject(redis_fixture_cmd(f, "SET counted 42"));
    assert_int_equal(count_of(l), 42);
    dlock_latch_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_count_down_of_a_finished_latch_changes_nothing(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_latch *l = new_latch(c, "finished");
    const char *channel = "redisson_countdownlatch__channel__{finished}";
    ASSERT_RC(dlock_latch_try_set_count(l, 1, NULL), DLOCK_OK);
    ASSERT_RC(dlock_latch_count_down(l), DLOCK_OK);
    redisContext *sub = subscribe_to(f, channel);
    ASSERT_RC(dlock_latch_count_down(l), DLOCK_OK);
    ASSERT_RC(dlock_latch_count_down(l), DLOCK_OK);
    char got[64];
    messages_until_end(f, sub, channel, got, sizeof(got));
    assert_string_equal(got, ""); /* no second "0" */
    redisFree(sub);
    assert_int_equal(redis_fixture_int(f, "EXISTS finished"), 0); /* not -1, not -2 */
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 0);
    assert_int_equal(count_of(l), 0);
    /* and an unset latch alike */
    dlock_latch *never = new_latch(c, "never-set");
    ASSERT_RC(dlock_latch_count_down(never), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 0);
    dlock_latch_free(never);
    dlock_latch_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_await_is_woken_by_the_third_count_down_by_three_threads),
        cmocka_unit_test(test_await_on_a_counting_latch_times_out_at_its_deadline_not_before),
        cmocka_unit_test(test_await_on_an_unset_or_finished_latch_returns_at_once),
        cmocka_unit_test(test_try_set_count_sets_only_an_unset_or_finished_latch),
        cmocka_unit_test(test_count_is_the_remaining_count_and_0_when_unset_or_finished),
        cmocka_unit_test(test_count_down_of_a_finished_latch_changes_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
