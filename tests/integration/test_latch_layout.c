/* SPDX-License-Identifier: MIT */
/* test_latch_layout.c — the count-down latch's Redis layout, read back with plain commands
 * (the count string, deleted at zero, and the "redisson_countdownlatch__channel__{N}"
 * channel with "1" on set and "0" at zero), and lost "0" messages (subscriber connection
 * killed, or the count cleared without one): they delay await by at most the 5 s recheck
 * and never block it.
 *
 * Every test starts its own server. */
#include "latch_helpers.h"

/* ---- the layout -------------------------------------------------------------------------- */

static void test_layout_is_a_string_count_deleted_at_zero(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_latch *l = new_latch(c, "laid-out");
    ASSERT_RC(dlock_latch_try_set_count(l, 2, NULL), DLOCK_OK);
    char *type = redis_fixture_str(f, "TYPE laid-out");
    assert_string_equal(type, "string");
    free(type);
    char *v = redis_fixture_str(f, "GET laid-out");
    assert_string_equal(v, "2");
    free(v);
    assert_int_equal(redis_fixture_int(f, "PTTL laid-out"), -1);
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 1);
    ASSERT_RC(dlock_latch_count_down(l), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "GET laid-out"), 1);
    ASSERT_RC(dlock_latch_count_down(l), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "EXISTS laid-out"), 0);
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 0);
    dlock_latch_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_channel_carries_1_when_a_count_is_set_and_0_when_it_reaches_zero(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_latch *l = new_latch(c, "announced");
    const char *channel = "redisson_countdownlatch__channel__{announced}";
    redisContext *sub = subscribe_to(f, channel);
    ASSERT_RC(dlock_latch_try_set_count(l, 2, NULL), DLOCK_OK); /* "1" */
    ASSERT_RC(dlock_latch_try_set_count(l, 7, NULL), DLOCK_OK); /* not set: nothing */
    ASSERT_RC(dlock_latch_count_down(l), DLOCK_OK);             /* 1 left: nothing */
    ASSERT_RC(dlock_latch_count_down(l), DLOCK_OK);             /* "0" */
    ASSERT_RC(dlock_latch_count_down(l), DLOCK_OK);             /* finished: nothing */
    ASSERT_RC(dlock_latch_try_set_count(l, 0, NULL), DLOCK_OK); /* sets nothing: nothing */
    ASSERT_RC(dlock_latch_try_set_count(l, 1, NULL), DLOCK_OK); /* "1" */
    ASSERT_RC(dlock_latch_count_down(l), DLOCK_OK);             /* "0" */
    char got[64];
    messages_until_end(f, sub, channel, got, sizeof(got));
    assert_string_equal(got, "1,0,1,0,");
    redisFree(sub);

    /* braces are always added around the name, even one that holds a '{' already */
    dlock_latch *tagged = new_latch(c, "l{t}");
    sub = subscribe_to(f, "redisson_countdownlatch__channel__{l{t}}");
    ASSERT_RC(dlock_latch_try_set_count(tagged, 1, NULL), DLOCK_OK);
    ASSERT_RC(dlock_latch_count_down(tagged), DLOCK_OK);
    messages_until_end(f, sub, "redisson_countdownlatch__channel__{l{t}}", got, sizeof(got));
    assert_string_equal(got, "1,0,");
    redisFree(sub);
    dlock_latch_free(tagged);
    dlock_latch_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- lost messages ----------------------------------------------------------------------- */

static void
test_await_returns_when_its_subscriber_is_killed_and_misses_the_last_count_down(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_client *b = connect_client(f);
    dlock_latch *la = new_latch(a, "lost");
    dlock_latch *lb = new_latch(b, "lost");
    ASSERT_RC(dlock_latch_try_set_count(lb, 2, NULL), DLOCK_OK);
    awaiter w = {.l = la, .wait_ms = test_slack_ms(20000)};
    start_awaiter_and_let_it_sleep(f, "redisson_countdownlatch__channel__{lost}", &w);
    ASSERT_RC(dlock_latch_count_down(lb), DLOCK_OK);
    test_sleep_ms(100);
    assert_false(blocking_call_returned(&w.call));
    /* The "0" is published while the waiter's subscriber connection is gone: it is killed,
     * and kept out (no room for another client) until the count down is done. */
    long long clients = redis_fixture_info_int(f, "clients", "connected_clients");
    /* one below: the killed connection's slot does not let it back in */
    freeReplyObject(redis_fixture_cmd(f, "CONFIG SET maxclients %lld", clients - 1));
    assert_true(redis_fixture_client_kill_type(f, "pubsub") >= 1);
    ASSERT_RC(dlock_latch_count_down(lb), DLOCK_OK);
    int64_t last_us = test_now_us();
    long long listeners = numsub(f, "redisson_countdownlatch__channel__{lost}");
    test_sleep_ms(200);
    assert_false(blocking_call_returned(&w.call));
    freeReplyObject(redis_fixture_cmd(f, "CONFIG SET maxclients 10000")); /* the default */
    assert_int_equal(listeners, 0);                                       /* nobody heard the "0" */
    ASSERT_RC(blocking_call_join(&w.call), DLOCK_OK);
    int64_t took_ms = (w.call.returned_us - last_us) / 1000;
    ASSERT_BETWEEN(took_ms, 200, 5500 + test_slack_ms(500));
    printf("# subscriber killed before the last count down: await returned %lld ms after it\n",
           (long long)took_ms);
    dlock_latch_free(la);
    dlock_latch_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

static void
test_await_returns_by_the_5_s_recheck_when_the_count_is_cleared_without_a_message(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_latch *l = new_latch(c, "silent");
    ASSERT_RC(dlock_latch_try_set_count(l, 1, NULL), DLOCK_OK);
    awaiter w = {.l = l, .wait_ms = test_slack_ms(20000)};
    int64_t asleep_us = test_now_us();
    start_awaiter_and_let_it_sleep(f, "redisson_countdownlatch__channel__{silent}", &w);
    long long gets = get_calls(f);
    /* no message will come: the count goes away behind the latch's back */
    assert_int_equal(redis_fixture_int(f, "DEL silent"), 1);
    int64_t cleared_us = test_now_us();
    test_sleep_ms(1000);
    assert_false(blocking_call_returned(&w.call));
    assert_int_equal(get_calls(f), gets); /* asleep, not polling */
    ASSERT_RC(blocking_call_join(&w.call), DLOCK_OK);
    int64_t took_ms = (w.call.returned_us - cleared_us) / 1000;
    ASSERT_BETWEEN((w.call.returned_us - asleep_us) / 1000, 4900, 5000 + test_slack_ms(1000));
    printf("# count cleared without a message: await returned %lld ms later (the recheck)\n",
           (long long)took_ms);
    dlock_latch_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_is_a_string_count_deleted_at_zero),
        cmocka_unit_test(test_channel_carries_1_when_a_count_is_set_and_0_when_it_reaches_zero),
        cmocka_unit_test(
            test_await_returns_when_its_subscriber_is_killed_and_misses_the_last_count_down),
        cmocka_unit_test(
            test_await_returns_by_the_5_s_recheck_when_the_count_is_cleared_without_a_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
