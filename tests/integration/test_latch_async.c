/* SPDX-License-Identifier: MIT */
/* test_latch_async.c — the count-down latch's bad input (DLOCK_EINVAL with no I/O, a key
 * of another type) and its async face on the application's own libev loop.
 *
 * Every test starts its own server. */
#include "latch_helpers.h"
#include "wake_count.h"

/* ---- bad input --------------------------------------------------------------------------- */

static void count_calls(dlock_latch *l, int status, void *arg) {
    (void)l;
    (void)status;
    (*(int *)arg)++;
}

static void test_bad_arguments_are_einval_without_any_io(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_latch *l = new_latch(c, "valid");
    long long before = total_commands(f);

    dlock_latch *out = (dlock_latch *)&out;
    dlock_latch *const sentinel = out;
    ASSERT_EINVAL(dlock_latch_new(NULL, "n", &out));
    ASSERT_EINVAL(dlock_latch_new(c, NULL, &out));
    ASSERT_EINVAL(dlock_latch_new(c, "", &out));
    ASSERT_EINVAL(dlock_latch_new(c, "n", NULL));
    assert_ptr_equal(out, sentinel);

    bool was_set = false;
    int64_t n = 0;
    ASSERT_EINVAL(dlock_latch_try_set_count(NULL, 1, &was_set));
    ASSERT_EINVAL(dlock_latch_try_set_count(l, -1, &was_set));
    ASSERT_EINVAL(dlock_latch_try_set_count(l, INT64_MIN, NULL));
    ASSERT_EINVAL(dlock_latch_count_down(NULL));
    ASSERT_EINVAL(dlock_latch_count(NULL, &n));
    ASSERT_EINVAL(dlock_latch_count(l, NULL));
    ASSERT_EINVAL(dlock_latch_await(NULL, 0));
    ASSERT_EINVAL(dlock_latch_await(l, -2));
    ASSERT_EINVAL(dlock_latch_await(l, INT64_MIN));

    int calls = 0;
    ASSERT_EINVAL(dlock_latch_await_async(NULL, 0, count_calls, &calls));
    ASSERT_EINVAL(dlock_latch_await_async(l, 0, NULL, &calls));
    ASSERT_EINVAL(dlock_latch_await_async(l, -2, count_calls, &calls));
    ASSERT_EINVAL(dlock_latch_count_down_async(NULL, count_calls, &calls));
    ASSERT_EINVAL(dlock_latch_count_down_async(l, NULL, &calls));
    dlock_latch_free(NULL);

    test_sleep_ms(50);
    assert_int_equal(calls, 0);
    assert_int_equal(total_commands(f) - before, 1); /* only the first INFO */
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 0);
    dlock_latch_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void
test_every_call_on_a_hash_key_is_eredis_wrongtype_and_the_key_is_unchanged(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_latch *l = new_latch(c, "a-hash");
    freeReplyObject(redis_fixture_cmd(f, "HSET a-hash f v"));
    bool was_set = false;
    int64_t n = 0;
    ASSERT_WRONGTYPE(dlock_latch_try_set_count(l, 3, &was_set));
    ASSERT_WRONGTYPE(dlock_latch_count_down(l));
    ASSERT_WRONGTYPE(dlock_latch_count(l, &n));
    ASSERT_WRONGTYPE(dlock_latch_await(l, 0));
    ASSERT_WRONGTYPE(dlock_latch_await(l, DLOCK_FOREVER)); /* the error ends the wait */
#undef ASSERT_WRONGTYPE
    char *type = redis_fixture_str(f, "TYPE a-hash");
    assert_string_equal(type, "hash");
    free(type);
    assert_int_equal(redis_fixture_int(f, "HLEN a-hash"), 1);
    char *v = redis_fixture_str(f, "HGET a-hash f");
    assert_string_equal(v, "v");
    free(v);
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 1);
    assert_int_equal(numsub(f, "redisson_countdownlatch__channel__{a-hash}"), 0);
    dlock_latch_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- the async face ---------------------------------------------------------------------- */

typedef struct done {
    int calls;
    int status;
    int order;
    dlock_latch *l;
    int64_t at_ms;
} done;

static int callbacks_so_far;

static void record_done(dlock_latch *l, int status, void *arg) {
    done *d = arg;
    d->calls++;
    d->status = status;
    d->order = ++callbacks_so_far;
    d->l = l;
    d->at_ms = test_now_ms();
}

static void test_async_await_completes_after_the_second_async_count_down_once_each(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    loop_app a;
    app_open(&a, NULL, 1);
    ASSERT_RC(dlock_latch_new(a.c, "async-latch", &a.latch), DLOCK_OK);
    callbacks_so_far = 0;
    done await = {0}, down1 = {0}, down2 = {0}, look = {0}, after = {0};
    bool ok = false;
    freeReplyObject(redis_fixture_cmd(a.f, "SET async-latch 2")); /* as try_set_count does */

    ASSERT_RC(dlock_latch_await_async(a.latch, 0, record_done, &look), DLOCK_OK);
    assert_int_equal(look.calls, 0); /* never inside the call */
    RUN_LOOP_UNTIL(a.loop, ok, look.calls > 0, test_slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(look.status, DLOCK_ETIMEDOUT);

    long long gets_before = get_calls(a.f);
    int64_t began_ms = test_now_ms();
    ASSERT_RC(dlock_latch_await_async(a.latch, DLOCK_FOREVER, record_done, &await), DLOCK_OK);
    assert_int_equal(await.calls, 0);
    RUN_LOOP_UNTIL(a.loop, ok,
                   numsub(a.f, "redisson_countdownlatch__channel__{async-latch}") == 1 &&
                       get_calls(a.f) >= gets_before + 2,
                   test_slack_ms(5000));
    assert_true(ok);

    ASSERT_RC(dlock_latch_count_down_async(a.latch, record_done, &down1), DLOCK_OK);
    assert_int_equal(down1.calls, 0);
    RUN_LOOP_UNTIL(a.loop, ok, down1.calls > 0, test_slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(down1.status, DLOCK_OK);
    assert_ptr_equal(down1.l, a.latch);
    run_loop_for(a.loop, 100);
    assert_int_equal(await.calls, 0);
    assert_int_equal(redis_fixture_int(a.f, "GET async-latch"), 1);

    uint64_t wakes_before = client_wakes(a.c);
    ASSERT_RC(dlock_latch_count_down_async(a.latch, record_done, &down2), DLOCK_OK);
    assert_int_equal(down2.calls, 0);
    RUN_LOOP_UNTIL(a.loop, ok, await.calls > 0, test_prompt_ms());
    assert_true(ok);
    ASSERT_RC(await.status, DLOCK_OK);
    assert_ptr_equal(await.l, a.latch);
    assert_int_equal(down2.calls, 1);
    assert_true(down2.order < await.order);
    ASSERT_BETWEEN(await.at_ms - down2.at_ms, 0, test_prompt_ms());
    /* let in by the count down's message, not its re-check (wake_count.h) */
    assert_true(let_in_by_a_message(a.c, wakes_before, began_ms, await.at_ms));
    assert_int_equal(redis_fixture_int(a.f, "EXISTS async-latch"), 0);

    /* finished: await is OK through the callback, still not inside the call */
    ASSERT_RC(dlock_latch_await_async(a.latch, 0, record_done, &after), DLOCK_OK);
    assert_int_equal(after.calls, 0);
    RUN_LOOP_UNTIL(a.loop, ok, after.calls > 0, test_slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(after.status, DLOCK_OK);

    run_loop_for(a.loop, 100); /* nothing is called twice */
    assert_int_equal(look.calls, 1);
    assert_int_equal(await.calls, 1);
    assert_int_equal(down1.calls, 1);
    assert_int_equal(down2.calls, 1);
    assert_int_equal(after.calls, 1);
    assert_int_equal(callbacks_so_far, 5);
    printf("# async count down -> waiting async await: %lld ms\n",
           (long long)(await.at_ms - down2.at_ms));
    app_close(&a);
}

static void test_latch_free_with_a_waiting_async_await_calls_it_back_canceled_once(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    loop_app a;
    app_open(&a, NULL, 1);
    ASSERT_RC(dlock_latch_new(a.c, "async-canceled", &a.latch), DLOCK_OK);
    done await = {0};
    bool ok = false;
    freeReplyObject(redis_fixture_cmd(a.f, "SET async-canceled 1"));
    ASSERT_RC(dlock_latch_await_async(a.latch, DLOCK_FOREVER, record_done, &await), DLOCK_OK);
    RUN_LOOP_UNTIL(a.loop, ok,
                   numsub(a.f, "redisson_countdownlatch__channel__{async-canceled}") == 1,
                   test_slack_ms(5000));
    assert_true(ok);
    run_loop_for(a.loop, 20);
    assert_int_equal(await.calls, 0);
    dlock_latch_free(a.latch);
    a.latch = NULL;
    assert_int_equal(await.calls, 0); /* not inside the call */
    RUN_LOOP_UNTIL(a.loop, ok, await.calls > 0, test_slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(await.status, DLOCK_ECANCELED);
    RUN_LOOP_UNTIL(a.loop, ok,
                   numsub(a.f, "redisson_countdownlatch__channel__{async-canceled}") == 0,
                   test_slack_ms(2000));
    assert_true(ok);
    freeReplyObject(redis_fixture_cmd(a.f, "DEL async-canceled"));
    freeReplyObject(
        redis_fixture_cmd(a.f, "PUBLISH redisson_countdownlatch__channel__{async-canceled} 0"));
    run_loop_for(a.loop, 100);
    assert_int_equal(await.calls, 1);
    app_close(&a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_arguments_are_einval_without_any_io),
        cmocka_unit_test(
            test_every_call_on_a_hash_key_is_eredis_wrongtype_and_the_key_is_unchanged),
        cmocka_unit_test(test_async_await_completes_after_the_second_async_count_down_once_each),
        cmocka_unit_test(test_latch_free_with_a_waiting_async_await_calls_it_back_canceled_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
