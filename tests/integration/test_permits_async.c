/* SPDX-License-Identifier: MIT */
/* test_permits_async.c — the permits tests of test_permits.c, split from it by concern: bad input;
 * the async face. Helpers: tests/support/permits_helpers.h. Every test starts its own server. */
#include "permits_helpers.h"
#include "wake_count.h"

/* ---- bad input --------------------------------------------------------------------------- */

static void count_calls(dlock_permits *p, int status, const dlock_permit_id *id, void *arg) {
    (void)p;
    (void)status;
    (void)id;
    (*(int *)arg)++;
}

static void test_bad_arguments_and_malformed_ids_are_einval_without_any_io(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_permits *p = new_permits(c, "valid");
    long long before = total_commands(f);

    dlock_permits *out = (dlock_permits *)&out; /* a sentinel: constructors leave it */
    dlock_permits *const sentinel = out;
    ASSERT_EINVAL(dlock_permits_new(NULL, "n", &out));
    ASSERT_EINVAL(dlock_permits_new(c, NULL, &out));
    ASSERT_EINVAL(dlock_permits_new(c, "", &out));
    ASSERT_EINVAL(dlock_permits_new(c, "n", NULL));
    assert_ptr_equal(out, sentinel);

    bool was_set = false;
    int64_t n = 0;
    dlock_permit_id id = {.hex = "0123456789abcdef0123456789abcdef"};
    dlock_permit_id untouched = id;
    ASSERT_EINVAL(dlock_permits_try_set_permits(NULL, 1, &was_set));
    ASSERT_EINVAL(dlock_permits_try_set_permits(p, -1, &was_set));
    ASSERT_EINVAL(dlock_permits_acquire(NULL, 0, -1, &id));
    ASSERT_EINVAL(dlock_permits_acquire(p, -2, -1, &id));
    ASSERT_EINVAL(dlock_permits_acquire(p, INT64_MIN, -1, &id));
    ASSERT_EINVAL(dlock_permits_acquire(p, 0, 0, &id));
    ASSERT_EINVAL(dlock_permits_acquire(p, 0, -2, &id));
    ASSERT_EINVAL(dlock_permits_acquire(p, 0, INT64_MIN, &id));
    ASSERT_EINVAL(dlock_permits_acquire(p, 0, -1, NULL));
    assert_memory_equal(&id, &untouched, sizeof(id));
    ASSERT_EINVAL(dlock_permits_available(NULL, &n));
    ASSERT_EINVAL(dlock_permits_available(p, NULL));

    /* ids: NULL, empty, short, a non-hex digit, too long (no NUL after 32 digits), a space */
    dlock_permit_id bad[6];
    memset(bad, 0, sizeof(bad));
    snprintf(bad[1].hex, sizeof(bad[1].hex), "0123456789abcdef");
    snprintf(bad[2].hex, sizeof(bad[2].hex), "0123456789abcdef0123456789abcdeg");
    memset(bad[3].hex, 'a', sizeof(bad[3].hex));
    snprintf(bad[4].hex, sizeof(bad[4].hex), "0123456789abcdef 123456789abcdef");
    snprintf(bad[5].hex, sizeof(bad[5].hex), "0x23456789abcdef0123456789abcdef");
    ASSERT_EINVAL(dlock_permits_release(p, NULL));
    ASSERT_EINVAL(dlock_permits_update_lease(p, NULL, 1000));
    for (int i = 0; i < 6; i++) {
        ASSERT_EINVAL(dlock_permits_release(p, &bad[i]));
        ASSERT_EINVAL(dlock_permits_update_lease(p, &bad[i], 1000));
    }
    ASSERT_EINVAL(dlock_permits_release(NULL, &id));
    ASSERT_EINVAL(dlock_permits_update_lease(NULL, &id, 1000));
    ASSERT_EINVAL(dlock_permits_update_lease(p, &id, 0));
    ASSERT_EINVAL(dlock_permits_update_lease(p, &id, -2));
    ASSERT_EINVAL(dlock_permits_update_lease(p, &id, INT64_MIN));

    int calls = 0;
    ASSERT_EINVAL(dlock_permits_acquire_async(NULL, 0, -1, count_calls, &calls));
    ASSERT_EINVAL(dlock_permits_acquire_async(p, 0, -1, NULL, &calls));
    ASSERT_EINVAL(dlock_permits_acquire_async(p, -2, -1, count_calls, &calls));
    ASSERT_EINVAL(dlock_permits_acquire_async(p, 0, 0, count_calls, &calls));
    ASSERT_EINVAL(dlock_permits_release_async(NULL, &id, count_calls, &calls));
    ASSERT_EINVAL(dlock_permits_release_async(p, &id, NULL, &calls));
    ASSERT_EINVAL(dlock_permits_release_async(p, NULL, count_calls, &calls));
    ASSERT_EINVAL(dlock_permits_release_async(p, &bad[2], count_calls, &calls));
    ASSERT_EINVAL(dlock_permits_release_async(p, &bad[3], count_calls, &calls));
    dlock_permits_free(NULL);

    test_sleep_ms(50);
    assert_int_equal(calls, 0);
    assert_int_equal(total_commands(f) - before, 1); /* only the first INFO */
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 0);
    dlock_permits_free(p);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void expect_hash_unchanged(redis_fixture *f, const char *key) {
    char *type = redis_fixture_str(f, "TYPE %s", key);
    assert_string_equal(type, "hash");
    free(type);
    assert_int_equal(redis_fixture_int(f, "HLEN %s", key), 1);
    char *v = redis_fixture_str(f, "HGET %s f", key);
    assert_string_equal(v, "v");
    free(v);
}

static void
test_calls_reading_a_hash_count_key_are_eredis_wrongtype_and_the_key_is_unchanged(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_permits *p = new_permits(c, "a-hash");
    freeReplyObject(redis_fixture_cmd(f, "HSET a-hash f v"));
    bool was_set = false;
    int64_t n = 0;
    dlock_permit_id id;
    ASSERT_WRONGTYPE(dlock_permits_try_set_permits(p, 3, &was_set));
    ASSERT_WRONGTYPE(dlock_permits_acquire(p, 0, -1, &id));
    ASSERT_WRONGTYPE(dlock_permits_acquire(p, 0, 1000, &id));
    ASSERT_WRONGTYPE(dlock_permits_acquire(p, DLOCK_FOREVER, -1, &id)); /* ends the wait */
    ASSERT_WRONGTYPE(dlock_permits_available(p, &n));
    expect_hash_unchanged(f, "a-hash");
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 1); /* no timeout set was made */
    assert_int_equal(numsub(f, "redisson_sc:{a-hash}"), 0);
    dlock_permits_free(p);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* The count key turned into a hash while a permit is held: releasing or re-leasing by id
 * must fail with WRONGTYPE before it writes anything, not take the permit out of the
 * timeout set and then fail to give it back. */
static void
test_release_by_id_with_a_hash_count_key_is_eredis_wrongtype_and_the_permit_stays(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_permits *p = new_permits(c, "turned");
    ASSERT_RC(dlock_permits_try_set_permits(p, 1, NULL), DLOCK_OK);
    dlock_permit_id held, made_up = {.hex = "0123456789abcdef0123456789abcdef"};
    ASSERT_RC(dlock_permits_acquire(p, 0, -1, &held), DLOCK_OK);
    freeReplyObject(redis_fixture_cmd(f, "DEL turned"));
    freeReplyObject(redis_fixture_cmd(f, "HSET turned f v"));
    int release_rc = dlock_permits_release(p, &held);
    long long held_left = redis_fixture_int(f, "ZCARD {turned}:timeout");
    int unknown_rc = dlock_permits_release(p, &made_up);
    int lease_rc = dlock_permits_update_lease(p, &made_up, 1000);
    expect_hash_unchanged(f, "turned");
    dlock_permits_free(p);
    dlock_client_free(c);
    redis_fixture_stop(f);
    ASSERT_RC(release_rc, DLOCK_EREDIS);
    if (held_left != 1)
        fail_msg("the failed release took the permit out of the timeout set (ZCARD %lld): it "
                 "is neither held nor back in the pool",
                 held_left);
    ASSERT_RC(unknown_rc, DLOCK_EREDIS);
    ASSERT_RC(lease_rc, DLOCK_EREDIS);
}

static void
test_every_call_with_a_hash_timeout_key_is_eredis_wrongtype_and_it_is_unchanged(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_permits *p = new_permits(c, "t-hash");
    freeReplyObject(redis_fixture_cmd(f, "SET t-hash 2"));
    freeReplyObject(redis_fixture_cmd(f, "HSET {t-hash}:timeout f v"));
    bool was_set = false;
    int64_t n = 0;
    dlock_permit_id id = {.hex = "0123456789abcdef0123456789abcdef"};
    ASSERT_WRONGTYPE(dlock_permits_try_set_permits(p, 3, &was_set));
    ASSERT_WRONGTYPE(dlock_permits_acquire(p, 0, -1, &id));
    ASSERT_WRONGTYPE(dlock_permits_acquire(p, DLOCK_FOREVER, 1000, &id));
    ASSERT_WRONGTYPE(dlock_permits_release(p, &id));
    ASSERT_WRONGTYPE(dlock_permits_update_lease(p, &id, 1000));
    ASSERT_WRONGTYPE(dlock_permits_available(p, &n));
    expect_hash_unchanged(f, "{t-hash}:timeout");
    assert_int_equal(redis_fixture_int(f, "GET t-hash"), 2);
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 2);
    dlock_permits_free(p);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- the async face ---------------------------------------------------------------------- */

typedef struct done {
    int calls;
    int status;
    int order;
    bool has_id;
    dlock_permit_id id;
    dlock_permits *p;
    int64_t at_ms;
} done;

static int callbacks_so_far;

static void record_done(dlock_permits *p, int status, const dlock_permit_id *id, void *arg) {
    done *d = arg;
    d->calls++;
    d->status = status;
    d->order = ++callbacks_so_far;
    d->has_id = id != NULL;
    if (id)
        d->id = *id;
    d->p = p;
    d->at_ms = test_now_ms();
}

static void
test_async_acquire_gives_the_id_to_its_callback_and_release_async_hands_it_on(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    loop_app a;
    app_open(&a, NULL, 1);
    ASSERT_RC(dlock_permits_new(a.c, "async-perm", &a.p), DLOCK_OK);
    callbacks_so_far = 0;
    done first = {0}, second = {0}, rel = {0}, again = {0}, busy = {0};
    bool ok = false;
    freeReplyObject(redis_fixture_cmd(a.f, "SET async-perm 1"));

    ASSERT_RC(dlock_permits_acquire_async(a.p, 0, -1, record_done, &first), DLOCK_OK);
    assert_int_equal(first.calls, 0); /* never inside the call */
    RUN_LOOP_UNTIL(a.loop, ok, first.calls > 0, test_slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(first.status, DLOCK_OK);
    assert_ptr_equal(first.p, a.p);
    assert_true(first.has_id);
    assert_true(is_lower_hex_32(first.id.hex));
    zentry z[2];
    assert_int_equal(timeout_set(a.f, "{async-perm}:timeout", z, 2), 1);
    assert_string_equal(z[0].hex, first.id.hex);

    /* empty pool, wait 0: DLOCK_ETIMEDOUT and no id */
    ASSERT_RC(dlock_permits_acquire_async(a.p, 0, 5000, record_done, &busy), DLOCK_OK);
    RUN_LOOP_UNTIL(a.loop, ok, busy.calls > 0, test_slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(busy.status, DLOCK_ETIMEDOUT);
    assert_false(busy.has_id);

    long long scripts_before = script_calls(a.f);
    int64_t began_ms = test_now_ms();
    ASSERT_RC(dlock_permits_acquire_async(a.p, DLOCK_FOREVER, 10000, record_done, &second),
              DLOCK_OK);
    RUN_LOOP_UNTIL(a.loop, ok,
                   numsub(a.f, "redisson_sc:{async-perm}") == 1 &&
                       script_calls(a.f) >= scripts_before + 2,
                   test_slack_ms(5000));
    assert_true(ok);
    run_loop_for(a.loop, 50);
    assert_int_equal(second.calls, 0);

    uint64_t wakes_before = client_wakes(a.c);
    ASSERT_RC(dlock_permits_release_async(a.p, &first.id, record_done, &rel), DLOCK_OK);
    assert_int_equal(rel.calls, 0);
    RUN_LOOP_UNTIL(a.loop, ok, second.calls > 0, test_prompt_ms());
    assert_true(ok);
    assert_int_equal(rel.calls, 1);
    ASSERT_RC(rel.status, DLOCK_OK);
    ASSERT_RC(second.status, DLOCK_OK);
    assert_true(rel.order < second.order);
    ASSERT_BETWEEN(second.at_ms - rel.at_ms, 0, test_prompt_ms());
    /* let in by the release's message, not its re-check (wake_count.h) */
    assert_true(let_in_by_a_message(a.c, wakes_before, began_ms, second.at_ms));
    assert_true(second.has_id);
    assert_string_not_equal(second.id.hex, first.id.hex);
    assert_int_equal(timeout_set(a.f, "{async-perm}:timeout", z, 2), 1);
    assert_string_equal(z[0].hex, second.id.hex);

    /* the first id is gone now: DLOCK_ENOTOWNER through the callback, no id */
    ASSERT_RC(dlock_permits_release_async(a.p, &first.id, record_done, &again), DLOCK_OK);
    assert_int_equal(again.calls, 0);
    RUN_LOOP_UNTIL(a.loop, ok, again.calls > 0, test_slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(again.status, DLOCK_ENOTOWNER);
    assert_false(again.has_id);

    run_loop_for(a.loop, 100); /* nothing is called twice */
    assert_int_equal(first.calls, 1);
    assert_int_equal(busy.calls, 1);
    assert_int_equal(second.calls, 1);
    assert_int_equal(rel.calls, 1);
    assert_int_equal(again.calls, 1);
    assert_int_equal(callbacks_so_far, 5);
    printf("# async release by id -> waiting async acquire: %lld ms\n",
           (long long)(second.at_ms - rel.at_ms));
    app_close(&a);
}

static void
test_permits_free_with_a_waiting_async_acquire_calls_it_back_canceled_once(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    loop_app a;
    app_open(&a, NULL, 1);
    ASSERT_RC(dlock_permits_new(a.c, "async-canceled", &a.p), DLOCK_OK);
    done acq = {0};
    bool ok = false;
    ASSERT_RC(dlock_permits_acquire_async(a.p, DLOCK_FOREVER, -1, record_done, &acq), DLOCK_OK);
    RUN_LOOP_UNTIL(a.loop, ok, numsub(a.f, "redisson_sc:{async-canceled}") == 1,
                   test_slack_ms(5000));
    assert_true(ok);
    run_loop_for(a.loop, 20);
    assert_int_equal(acq.calls, 0);
    dlock_permits_free(a.p);
    a.p = NULL;
    assert_int_equal(acq.calls, 0); /* not inside the call */
    RUN_LOOP_UNTIL(a.loop, ok, acq.calls > 0, test_slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(acq.status, DLOCK_ECANCELED);
    assert_false(acq.has_id);
    RUN_LOOP_UNTIL(a.loop, ok, numsub(a.f, "redisson_sc:{async-canceled}") == 0,
                   test_slack_ms(2000));
    assert_true(ok);
    run_loop_for(a.loop, 50);
    assert_int_equal(acq.calls, 1);
    assert_int_equal(redis_fixture_int(a.f, "DBSIZE"), 0); /* it took nothing */
    app_close(&a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_arguments_and_malformed_ids_are_einval_without_any_io),
        cmocka_unit_test(
            test_calls_reading_a_hash_count_key_are_eredis_wrongtype_and_the_key_is_unchanged),
        cmocka_unit_test(
            test_release_by_id_with_a_hash_count_key_is_eredis_wrongtype_and_the_permit_stays),
        cmocka_unit_test(
            test_every_call_with_a_hash_timeout_key_is_eredis_wrongtype_and_it_is_unchanged),
        cmocka_unit_test(
            test_async_acquire_gives_the_id_to_its_callback_and_release_async_hands_it_on),
        cmocka_unit_test(
            test_permits_free_with_a_waiting_async_acquire_calls_it_back_canceled_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
