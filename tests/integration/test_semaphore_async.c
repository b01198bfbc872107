/* SPDX-License-Identifier: MIT */
/* test_semaphore_async.c — the semaphore tests of test_semaphore.c, split from it by concern: bad
 * input; the async face. Helpers: tests/support/semaphore_helpers.h. Every test starts its own
 * server. */
#include "semaphore_helpers.h"
#include "wake_count.h"

/* ---- bad input --------------------------------------------------------------------------- */

static void never_called(dlock_semaphore *s, int status, void *arg) {
    (void)s;
    (void)status;
    (*(int *)arg)++;
}

static void test_bad_arguments_are_einval_without_any_io(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_semaphore *s = new_semaphore(c, "valid");
    long long before = total_commands(f);

    dlock_semaphore *out = (dlock_semaphore *)&out; /* a sentinel: constructors leave it */
    dlock_semaphore *const sentinel = out;
    ASSERT_EINVAL(dlock_semaphore_new(NULL, "n", &out));
    ASSERT_EINVAL(dlock_semaphore_new(c, NULL, &out));
    ASSERT_EINVAL(dlock_semaphore_new(c, "", &out));
    ASSERT_EINVAL(dlock_semaphore_new(c, "n", NULL));
    assert_ptr_equal(out, sentinel);

    bool was_set = false;
    int64_t n = 0;
    ASSERT_EINVAL(dlock_semaphore_try_set_permits(NULL, 1, &was_set));
    ASSERT_EINVAL(dlock_semaphore_try_set_permits(s, -1, &was_set));
    ASSERT_EINVAL(dlock_semaphore_try_set_permits(s, INT64_MIN, NULL));
    ASSERT_EINVAL(dlock_semaphore_add_permits(NULL, 1));
    ASSERT_EINVAL(dlock_semaphore_acquire(NULL, 1));
    ASSERT_EINVAL(dlock_semaphore_acquire(s, -1));
    ASSERT_EINVAL(dlock_semaphore_acquire(s, INT64_MIN));
    ASSERT_EINVAL(dlock_semaphore_try_acquire(NULL, 1, 0));
    ASSERT_EINVAL(dlock_semaphore_try_acquire(s, -1, 0));
    ASSERT_EINVAL(dlock_semaphore_try_acquire(s, 1, -2));
    ASSERT_EINVAL(dlock_semaphore_try_acquire(s, 1, -1000));
    ASSERT_EINVAL(dlock_semaphore_try_acquire(s, 1, INT64_MIN));
    ASSERT_EINVAL(dlock_semaphore_release(NULL, 1));
    ASSERT_EINVAL(dlock_semaphore_release(s, -1));
    ASSERT_EINVAL(dlock_semaphore_available(NULL, &n));
    ASSERT_EINVAL(dlock_semaphore_available(s, NULL));
    ASSERT_EINVAL(dlock_semaphore_drain(NULL, &n));

    int calls = 0;
    ASSERT_EINVAL(dlock_semaphore_acquire_async(NULL, 1, 0, never_called, &calls));
    ASSERT_EINVAL(dlock_semaphore_acquire_async(s, 1, 0, NULL, &calls));
    ASSERT_EINVAL(dlock_semaphore_acquire_async(s, -1, 0, never_called, &calls));
    ASSERT_EINVAL(dlock_semaphore_acquire_async(s, 1, -2, never_called, &calls));
    ASSERT_EINVAL(dlock_semaphore_release_async(NULL, 1, never_called, &calls));
    ASSERT_EINVAL(dlock_semaphore_release_async(s, 1, NULL, &calls));
    ASSERT_EINVAL(dlock_semaphore_release_async(s, -1, never_called, &calls));
    dlock_semaphore_free(NULL);

    test_sleep_ms(50);
    assert_int_equal(calls, 0); /* a call that returned an error never calls back */
    long long after = total_commands(f);
    assert_int_equal(after - before, 1); /* only the first INFO */
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 0);
    dlock_semaphore_free(s);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_acquiring_or_releasing_0_permits_succeeds_at_once_without_io(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_semaphore *s = new_semaphore(c, "nothing");
    long long before = total_commands(f);
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_semaphore_acquire(s, 0), DLOCK_OK);
    ASSERT_RC(dlock_semaphore_try_acquire(s, 0, 0), DLOCK_OK);
    ASSERT_RC(dlock_semaphore_try_acquire(s, 0, 5000), DLOCK_OK);
    ASSERT_RC(dlock_semaphore_release(s, 0), DLOCK_OK);
    int64_t took = test_now_ms() - start;
    /* "without I/O" is what the command count proves; how long it took is only shown */
    printf("# four calls with 0 permits: %lld ms\n", (long long)took);
    assert_int_equal(total_commands(f) - before, 1); /* only the first INFO */
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 0);
    /* and with no permit available at all: still at once */
    ASSERT_RC(dlock_semaphore_add_permits(s, -2), DLOCK_OK);
    before = total_commands(f);
    ASSERT_RC(dlock_semaphore_acquire(s, 0), DLOCK_OK);
    assert_int_equal(total_commands(f) - before, 1);
    assert_int_equal(redis_fixture_int(f, "GET nothing"), -2);
    dlock_semaphore_free(s);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void
test_every_call_on_a_hash_key_is_eredis_wrongtype_and_the_key_is_unchanged(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_semaphore *s = new_semaphore(c, "a-hash");
    freeReplyObject(redis_fixture_cmd(f, "HSET a-hash f v"));
    int64_t n = 0;
    bool was_set = false;
    ASSERT_WRONGTYPE(dlock_semaphore_try_set_permits(s, 3, &was_set));
    ASSERT_WRONGTYPE(dlock_semaphore_add_permits(s, 3));
    ASSERT_WRONGTYPE(dlock_semaphore_add_permits(s, -3));
    ASSERT_WRONGTYPE(dlock_semaphore_try_acquire(s, 1, 0));
    ASSERT_WRONGTYPE(dlock_semaphore_try_acquire(s, 1, 2000));
    ASSERT_WRONGTYPE(dlock_semaphore_acquire(s, 1)); /* forever: the error ends the wait */
    ASSERT_WRONGTYPE(dlock_semaphore_release(s, 1));
    ASSERT_WRONGTYPE(dlock_semaphore_available(s, &n));
    ASSERT_WRONGTYPE(dlock_semaphore_drain(s, &n));
#undef ASSERT_WRONGTYPE
    char *type = redis_fixture_str(f, "TYPE a-hash");
    assert_string_equal(type, "hash");
    free(type);
    assert_int_equal(redis_fixture_int(f, "HLEN a-hash"), 1);
    char *v = redis_fixture_str(f, "HGET a-hash f");
    assert_string_equal(v, "v");
    free(v);
    assert_int_equal(redis_fixture_int(f, "PTTL a-hash"), -1);
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 1);
    assert_int_equal(numsub(f, "redisson_sc:{a-hash}"), 0); /* no waiter was left behind */
    dlock_semaphore_free(s);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- the async face ---------------------------------------------------------------------- */

typedef struct done {
    int calls;
    int status;
    int order; /* when it ran among all callbacks of the test */
    dlock_semaphore *s;
    int64_t at_ms;
} done;

static int callbacks_so_far;

static void record_done(dlock_semaphore *s, int status, void *arg) {
    done *d = arg;
    d->calls++;
    d->status = status;
    d->order = ++callbacks_so_far;
    d->s = s;
    d->at_ms = test_now_ms();
}

static void
test_async_acquire_of_2_completes_after_the_second_async_release_of_1_once_each(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    loop_app a;
    app_open(&a, NULL, 1);
    ASSERT_RC(dlock_semaphore_new(a.c, "async-sem", &a.s), DLOCK_OK);
    callbacks_so_far = 0;
    done acq = {0}, rel1 = {0}, rel2 = {0}, now = {0};
    bool ok = false;

    long long scripts_before = script_calls(a.f);
    int64_t began_ms = test_now_ms();
    ASSERT_RC(dlock_semaphore_acquire_async(a.s, 2, DLOCK_FOREVER, record_done, &acq), DLOCK_OK);
    assert_int_equal(acq.calls, 0); /* never inside the call */
    RUN_LOOP_UNTIL(a.loop, ok,
                   numsub(a.f, "redisson_sc:{async-sem}") == 1 &&
                       script_calls(a.f) >= scripts_before + 2,
                   test_slack_ms(5000));
    assert_true(ok);
    run_loop_for(a.loop, 50);
    assert_int_equal(acq.calls, 0);

    ASSERT_RC(dlock_semaphore_release_async(a.s, 1, record_done, &rel1), DLOCK_OK);
    assert_int_equal(rel1.calls, 0);
    RUN_LOOP_UNTIL(a.loop, ok, rel1.calls > 0, test_slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(rel1.status, DLOCK_OK);
    assert_ptr_equal(rel1.s, a.s);
    run_loop_for(a.loop, 100);
    assert_int_equal(acq.calls, 0); /* 1 of 2 */
    assert_int_equal(redis_fixture_int(a.f, "GET async-sem"), 1);

    uint64_t wakes_before = client_wakes(a.c);
    ASSERT_RC(dlock_semaphore_release_async(a.s, 1, record_done, &rel2), DLOCK_OK);
    assert_int_equal(rel2.calls, 0);
    RUN_LOOP_UNTIL(a.loop, ok, acq.calls > 0, test_prompt_ms());
    assert_true(ok);
    ASSERT_RC(acq.status, DLOCK_OK);
    assert_ptr_equal(acq.s, a.s);
    assert_int_equal(rel2.calls, 1);
    assert_true(rel2.order < acq.order);
    ASSERT_BETWEEN(acq.at_ms - rel2.at_ms, 0, test_prompt_ms());
    /* let in by the release's message, not its re-check (wake_count.h) */
    assert_true(let_in_by_a_message(a.c, wakes_before, began_ms, acq.at_ms));
    assert_int_equal(redis_fixture_int(a.f, "GET async-sem"), 0);

    /* wait 0 with nothing available: DLOCK_ETIMEDOUT through the callback */
    ASSERT_RC(dlock_semaphore_acquire_async(a.s, 1, 0, record_done, &now), DLOCK_OK);
    assert_int_equal(now.calls, 0);
    RUN_LOOP_UNTIL(a.loop, ok, now.calls > 0, test_slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(now.status, DLOCK_ETIMEDOUT);

    run_loop_for(a.loop, 100); /* nothing is called twice */
    assert_int_equal(acq.calls, 1);
    assert_int_equal(rel1.calls, 1);
    assert_int_equal(rel2.calls, 1);
    assert_int_equal(now.calls, 1);
    assert_int_equal(callbacks_so_far, 4);
    printf("# async release -> waiting async acquire of 2: %lld ms\n",
           (long long)(acq.at_ms - rel2.at_ms));
    app_close(&a);
}

static void test_async_acquire_of_0_calls_back_ok_once_without_io(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    loop_app a;
    app_open(&a, NULL, 1);
    ASSERT_RC(dlock_semaphore_new(a.c, "async-zero", &a.s), DLOCK_OK);
    callbacks_so_far = 0;
    done acq = {0}, rel = {0};
    bool ok = false;
    long long before = total_commands(a.f);
    ASSERT_RC(dlock_semaphore_acquire_async(a.s, 0, DLOCK_FOREVER, record_done, &acq), DLOCK_OK);
    ASSERT_RC(dlock_semaphore_release_async(a.s, 0, record_done, &rel), DLOCK_OK);
    assert_int_equal(acq.calls, 0);
    assert_int_equal(rel.calls, 0);
    RUN_LOOP_UNTIL(a.loop, ok, acq.calls > 0 && rel.calls > 0, test_slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(acq.status, DLOCK_OK);
    ASSERT_RC(rel.status, DLOCK_OK);
    run_loop_for(a.loop, 50);
    assert_int_equal(acq.calls, 1);
    assert_int_equal(rel.calls, 1);
    assert_int_equal(total_commands(a.f) - before, 1);
    app_close(&a);
}

static void
test_semaphore_free_with_a_waiting_async_acquire_calls_it_back_canceled_once(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    loop_app a;
    app_open(&a, NULL, 1);
    ASSERT_RC(dlock_semaphore_new(a.c, "async-canceled", &a.s), DLOCK_OK);
    callbacks_so_far = 0;
    done acq = {0};
    bool ok = false;
    ASSERT_RC(dlock_semaphore_acquire_async(a.s, 1, DLOCK_FOREVER, record_done, &acq), DLOCK_OK);
    RUN_LOOP_UNTIL(a.loop, ok, numsub(a.f, "redisson_sc:{async-canceled}") == 1,
                   test_slack_ms(5000));
    assert_true(ok);
    run_loop_for(a.loop, 20);
    assert_int_equal(acq.calls, 0);
    dlock_semaphore_free(a.s);
    a.s = NULL;
    assert_int_equal(acq.calls, 0); /* not inside the call */
    RUN_LOOP_UNTIL(a.loop, ok, acq.calls > 0, test_slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(acq.status, DLOCK_ECANCELED);
    RUN_LOOP_UNTIL(a.loop, ok, numsub(a.f, "redisson_sc:{async-canceled}") == 0,
                   test_slack_ms(2000));
    assert_true(ok);
    /* a release now finds nobody waiting: the permit stays */
    freeReplyObject(redis_fixture_cmd(a.f, "SET async-canceled 1"));
    freeReplyObject(redis_fixture_cmd(a.f, "PUBLISH redisson_sc:{async-canceled} 1"));
    run_loop_for(a.loop, 100);
    assert_int_equal(acq.calls, 1);
    assert_int_equal(redis_fixture_int(a.f, "GET async-canceled"), 1);
    app_close(&a); /* dlock_semaphore_free(NULL) is a no-op */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_arguments_are_einval_without_any_io),
        cmocka_unit_test(test_acquiring_or_releasing_0_permits_succeeds_at_once_without_io),
        cmocka_unit_test(
            test_every_call_on_a_hash_key_is_eredis_wrongtype_and_the_key_is_unchanged),
        cmocka_unit_test(
            test_async_acquire_of_2_completes_after_the_second_async_release_of_1_once_each),
        cmocka_unit_test(test_async_acquire_of_0_calls_back_ok_once_without_io),
        cmocka_unit_test(
            test_semaphore_free_with_a_waiting_async_acquire_calls_it_back_canceled_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
