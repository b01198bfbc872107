/* SPDX-License-Identifier: MIT */
/* test_semaphore.c — the semaphore (Redisson RSemaphore) of src/semaphore/semaphore.c,
 * blocking and async faces, against a real redis-server.
 *
 * What is proven (here and in the files split from it): Redisson's own permit sequences (set,
 * acquire, add, release, drain, negative counts); a waiting acquire is woken by a release (of this
 * client or another) within 100 ms of it, and only once enough permits are back; a waiter does not
 * poll; a release's message wakes the waiters of one client in arrival order and stops at the first
 * that does not fit, so a later request for fewer permits is not woken ahead of an earlier one for
 * more (first attempts and the 5 s recheck are not ordered: semaphore.h), and one that gave up
 * hands on to the waiters it kept asleep; the Redis layout of REDIS_LAYOUT.md read back with plain
 * commands (the count string, the "redisson_sc:{N}" channel and its messages); the async face on
 * the application's own libev loop (callbacks exactly once, never inside the call, DLOCK_ECANCELED
 * when the handle goes); bad input (DLOCK_EINVAL with no I/O, a key of another type); and that
 * acquiring or releasing 0 permits does no I/O.
 *
 * Every test starts its own server.
 *
 * Split by concern: Redisson's sequences and the layout here; waking, waiting and arrival
 * order in test_semaphore_waiting.c, bad input and the async face in test_semaphore_async.c.
 * Helpers: tests/support/semaphore_helpers.h.
 */
#include "semaphore_helpers.h"
#include "wake_count.h"

/* ---- Redisson's sequences ---------------------------------------------------------------- */

static void test_set_10_acquire_10_add_4_release_10_acquire_5_leaves_0_4_14_9(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_semaphore *s = new_semaphore(c, "redisson-add");
    bool was_set = false;
    ASSERT_RC(dlock_semaphore_try_set_permits(s, 10, &was_set), DLOCK_OK);
    assert_true(was_set);
    ASSERT_RC(dlock_semaphore_acquire(s, 10), DLOCK_OK);
    assert_int_equal(available_of(s), 0);
    ASSERT_RC(dlock_semaphore_add_permits(s, 4), DLOCK_OK);
    assert_int_equal(available_of(s), 4);
    ASSERT_RC(dlock_semaphore_release(s, 10), DLOCK_OK);
    assert_int_equal(available_of(s), 14);
    ASSERT_RC(dlock_semaphore_acquire(s, 5), DLOCK_OK);
    assert_int_equal(available_of(s), 9);
    assert_int_equal(redis_fixture_int(f, "GET redisson-add"), 9);
    dlock_semaphore_free(s);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void
test_set_10_acquire_10_add_minus_5_release_10_acquire_5_leaves_minus_5_5_0(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_semaphore *s = new_semaphore(c, "redisson-reduce");
    ASSERT_RC(dlock_semaphore_try_set_permits(s, 10, NULL), DLOCK_OK);
    ASSERT_RC(dlock_semaphore_acquire(s, 10), DLOCK_OK);
    ASSERT_RC(dlock_semaphore_add_permits(s, -5), DLOCK_OK);
    assert_int_equal(available_of(s), -5);
    /* nothing to take while the count is negative */
    ASSERT_RC(dlock_semaphore_try_acquire(s, 1, 0), DLOCK_ETIMEDOUT);
    ASSERT_RC(dlock_semaphore_release(s, 10), DLOCK_OK);
    assert_int_equal(available_of(s), 5);
    ASSERT_RC(dlock_semaphore_acquire(s, 5), DLOCK_OK);
    assert_int_equal(available_of(s), 0);
    dlock_semaphore_free(s);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_release_on_a_fresh_semaphore_makes_1_available(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_semaphore *s = new_semaphore(c, "fresh");
    assert_int_equal(available_of(s), 0); /* absent counts as 0 */
    assert_int_equal(redis_fixture_int(f, "EXISTS fresh"), 0);
    ASSERT_RC(dlock_semaphore_release(s, 1), DLOCK_OK);
    assert_int_equal(available_of(s), 1);
    assert_int_equal(redis_fixture_int(f, "GET fresh"), 1);
    dlock_semaphore_free(s);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_try_set_permits_sets_only_a_semaphore_that_does_not_exist(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_semaphore *s = new_semaphore(c, "set-once");
    bool was_set = false;
    ASSERT_RC(dlock_semaphore_try_set_permits(s, 3, &was_set), DLOCK_OK);
    assert_true(was_set);
    ASSERT_RC(dlock_semaphore_try_set_permits(s, 7, &was_set), DLOCK_OK);
    assert_false(was_set);
    assert_int_equal(available_of(s), 3);
    /* taken down to 0 it still exists: still not set again */
    ASSERT_RC(dlock_semaphore_acquire(s, 3), DLOCK_OK);
    was_set = true;
    ASSERT_RC(dlock_semaphore_try_set_permits(s, 7, &was_set), DLOCK_OK);
    assert_false(was_set);
    assert_int_equal(available_of(s), 0);
    /* 0 permits is a valid setting */
    dlock_semaphore *z = new_semaphore(c, "set-zero");
    ASSERT_RC(dlock_semaphore_try_set_permits(z, 0, &was_set), DLOCK_OK);
    assert_true(was_set);
    assert_int_equal(redis_fixture_int(f, "GET set-zero"), 0);
    dlock_semaphore_free(z);
    dlock_semaphore_free(s);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_drain_returns_what_was_available_and_leaves_0(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_semaphore *s = new_semaphore(c, "drained");
    ASSERT_RC(dlock_semaphore_try_set_permits(s, 10, NULL), DLOCK_OK);
    ASSERT_RC(dlock_semaphore_acquire(s, 3), DLOCK_OK);
    int64_t drained = -1;
    ASSERT_RC(dlock_semaphore_drain(s, &drained), DLOCK_OK);
    assert_int_equal(drained, 7);
    assert_int_equal(available_of(s), 0);
    assert_int_equal(redis_fixture_int(f, "GET drained"), 0);
    /* again: nothing left to take */
    ASSERT_RC(dlock_semaphore_drain(s, &drained), DLOCK_OK);
    assert_int_equal(drained, 0);
    /* a semaphore that does not exist drains 0, and drained may be NULL */
    dlock_semaphore *none = new_semaphore(c, "never-set");
    drained = -1;
    ASSERT_RC(dlock_semaphore_drain(none, &drained), DLOCK_OK);
    assert_int_equal(drained, 0);
    ASSERT_RC(dlock_semaphore_drain(s, NULL), DLOCK_OK);
    dlock_semaphore_free(none);
    dlock_semaphore_free(s);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_drain_of_a_negative_count_returns_0_and_leaves_it(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_semaphore *s = new_semaphore(c, "negative");
    ASSERT_RC(dlock_semaphore_add_permits(s, -3), DLOCK_OK);
    assert_int_equal(available_of(s), -3);
    int64_t drained = -1;
    ASSERT_RC(dlock_semaphore_drain(s, &drained), DLOCK_OK);
    assert_int_equal(drained, 0);
    assert_int_equal(available_of(s), -3);
    assert_int_equal(redis_fixture_int(f, "GET negative"), -3);
    dlock_semaphore_free(s);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- the layout -------------------------------------------------------------------------- */

static void test_layout_is_a_string_count_under_the_name(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_semaphore *s = new_semaphore(c, "laid-out");
    ASSERT_RC(dlock_semaphore_try_set_permits(s, 5, NULL), DLOCK_OK);
    char *type = redis_fixture_str(f, "TYPE laid-out");
    assert_string_equal(type, "string");
    free(type);
    char *v = redis_fixture_str(f, "GET laid-out");
    assert_string_equal(v, "5");
    free(v);
    assert_int_equal(redis_fixture_int(f, "PTTL laid-out"), -1); /* no lease */
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 1);         /* nothing else */
    ASSERT_RC(dlock_semaphore_acquire(s, 2), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "GET laid-out"), 3);
    /* a count written by someone else (a Redisson client) is what the library reads */
    freeReplyObject(redis_fixture_cmd(f, "SET laid-out 8"));
    assert_int_equal(available_of(s), 8);
    ASSERT_RC(dlock_semaphore_try_acquire(s, 8, 0), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "GET laid-out"), 0);
    dlock_semaphore_free(s);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_channel_redisson_sc_carries_the_new_count_of_set_add_and_release(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_semaphore *s = new_semaphore(c, "announced");
    const char *channel = "redisson_sc:{announced}";
    redisContext *sub = subscribe_to(f, channel);
    ASSERT_RC(dlock_semaphore_try_set_permits(s, 5, NULL), DLOCK_OK); /* "5" */
    ASSERT_RC(dlock_semaphore_try_set_permits(s, 9, NULL), DLOCK_OK); /* not set: nothing */
    ASSERT_RC(dlock_semaphore_acquire(s, 2), DLOCK_OK);               /* taking: nothing */
    ASSERT_RC(dlock_semaphore_release(s, 1), DLOCK_OK);               /* "4" */
    ASSERT_RC(dlock_semaphore_add_permits(s, 3), DLOCK_OK);           /* "7" */
    ASSERT_RC(dlock_semaphore_add_permits(s, -10), DLOCK_OK);         /* "-3" */
    ASSERT_RC(dlock_semaphore_release(s, 0), DLOCK_OK);               /* nothing */
    ASSERT_RC(dlock_semaphore_release(s, 13), DLOCK_OK);              /* "10" */
    ASSERT_RC(dlock_semaphore_drain(s, NULL), DLOCK_OK);              /* taking: nothing */
    char got[256];
    messages_until_end(f, sub, channel, got, sizeof(got));
    assert_string_equal(got, "5,4,7,-3,10,");
    redisFree(sub);

    /* a name holding a '{' is its own hash tag: no extra braces on the channel */
    dlock_semaphore *tagged = new_semaphore(c, "sem{tag}");
    sub = subscribe_to(f, "redisson_sc:sem{tag}");
    ASSERT_RC(dlock_semaphore_release(tagged, 2), DLOCK_OK);
    messages_until_end(f, sub, "redisson_sc:sem{tag}", got, sizeof(got));
    assert_string_equal(got, "2,");
    redisFree(sub);
    assert_int_equal(redis_fixture_int(f, "GET sem{tag}"), 2);
    dlock_semaphore_free(tagged);
    dlock_semaphore_free(s);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_release_published_by_hand_on_the_channel_wakes_a_waiter(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_semaphore *s = new_semaphore(c, "by-hand");
    waiter w = {.s = s, .permits = 2, .wait_ms = test_slack_ms(10000)};
    int64_t began_ms = test_now_ms();
    start_waiter_and_let_it_sleep(f, "redisson_sc:{by-hand}", &w, 1, 2);
    uint64_t wakes_before = client_wakes(c);
    /* what a Redisson client's release does: INCRBY then PUBLISH the new count */
    freeReplyObject(redis_fixture_cmd(f, "INCRBY by-hand 2"));
    int64_t published_us = test_now_us();
    freeReplyObject(redis_fixture_cmd(f, "PUBLISH redisson_sc:{by-hand} 2"));
    ASSERT_RC(blocking_call_join(&w.call), DLOCK_OK);
    ASSERT_BETWEEN((w.call.returned_us - published_us) / 1000, 0, test_prompt_ms());
    /* let in by the message, not its re-check (wake_count.h) */
    assert_true(let_in_by_a_message(c, wakes_before, began_ms, w.call.returned_us / 1000));
    assert_int_equal(redis_fixture_int(f, "GET by-hand"), 0);
    dlock_semaphore_free(s);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_set_10_acquire_10_add_4_release_10_acquire_5_leaves_0_4_14_9),
        cmocka_unit_test(
            test_set_10_acquire_10_add_minus_5_release_10_acquire_5_leaves_minus_5_5_0),
        cmocka_unit_test(test_release_on_a_fresh_semaphore_makes_1_available),
        cmocka_unit_test(test_try_set_permits_sets_only_a_semaphore_that_does_not_exist),
        cmocka_unit_test(test_drain_returns_what_was_available_and_leaves_0),
        cmocka_unit_test(test_drain_of_a_negative_count_returns_0_and_leaves_it),
        cmocka_unit_test(test_layout_is_a_string_count_under_the_name),
        cmocka_unit_test(test_channel_redisson_sc_carries_the_new_count_of_set_add_and_release),
        cmocka_unit_test(test_release_published_by_hand_on_the_channel_wakes_a_waiter),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
