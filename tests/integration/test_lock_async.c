/* SPDX-License-Identifier: MIT */
/* test_lock_async.c — the async face of the lock on the application's own libev loop
 * (dlock_client_new_on_loop): explicit owners, hand-off between two owners of one client,
 * completion callbacks called exactly once and never inside the call that started them,
 * DLOCK_ENOTOWNER through the callback, argument checks with no I/O, the watchdog renewing
 * on the application's loop, and a waiting acquire canceled by dlock_lock_free().
 *
 * The test thread runs the loop itself, so every callback runs on it: the records they
 * write need no locking. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dlock.h"
#include "dlock/adapters/libev.h"
#include "harness.h"
#include "redis_fixture.h"
#include "test_util.h"

#define BUDGET_S 60
#define OWNER_A 1001u
#define OWNER_B 1002u
#define OWNER_C 1003u

/* ---- the application: a loop, a client on it, one lock ---------------------------------- */

/* ---- completion records ------------------------------------------------------------------ */

typedef struct done {
    int calls;
    int status;
    int order; /* when it ran among all callbacks of the test */
    dlock_lock *lock;
    int64_t at_ms;
} done;

static int callbacks_so_far;

static void record_done(dlock_lock *l, int status, void *arg) {
    done *d = arg;
    d->calls++;
    d->status = status;
    d->order = ++callbacks_so_far;
    d->lock = l;
    d->at_ms = test_now_ms();
}

static void expect_holder(loop_app *a, uint64_t owner, int count) {
    char want[256], dump[512];
    snprintf(want, sizeof(want), "%s:%llu=%d;", dlock_client_id(a->c), (unsigned long long)owner,
             count);
    hash_dump(a->f, dlock_lock_name(a->l), dump, sizeof(dump));
    assert_string_equal(dump, want);
}

/* ---- tests ------------------------------------------------------------------------------- */

static void
test_async_second_owner_waits_until_the_first_releases_then_gets_the_lock(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    loop_app a;
    app_open(&a, NULL, 1);
    ASSERT_RC(dlock_lock_new(a.c, "async-handoff", &a.l), DLOCK_OK);
    callbacks_so_far = 0;
    done acq_a = {0}, acq_b = {0}, rel_a = {0}, rel_b = {0};
    bool ok = false;

    ASSERT_RC(dlock_lock_acquire_async(a.l, OWNER_A, DLOCK_FOREVER, 30000, record_done, &acq_a),
              DLOCK_OK);
    assert_int_equal(acq_a.calls, 0); /* never inside the call */
    RUN_LOOP_UNTIL(a.loop, ok, acq_a.calls > 0, slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(acq_a.status, DLOCK_OK);
    assert_ptr_equal(acq_a.lock, a.l);
    expect_holder(&a, OWNER_A, 1);

    long long scripts_before = script_calls(a.f);
    ASSERT_RC(dlock_lock_acquire_async(a.l, OWNER_B, slack_ms(10000), 30000, record_done, &acq_b),
              DLOCK_OK);
    assert_int_equal(acq_b.calls, 0);
    /* B is a sleeping waiter: subscribed, both of its attempts answered "busy" */
    RUN_LOOP_UNTIL(a.loop, ok,
                   numsub(a.f, "redisson_lock__channel:{async-handoff}") == 1 &&
                       script_calls(a.f) >= scripts_before + 2,
                   slack_ms(5000));
    assert_true(ok);
    run_loop_for(a.loop, 50);
    assert_int_equal(acq_b.calls, 0);
    expect_holder(&a, OWNER_A, 1);

    /* A's lease is 30 s, B's hint: only the release's message lets B in within
     * test_prompt_ms() */
    ASSERT_RC(dlock_lock_release_async(a.l, OWNER_A, record_done, &rel_a), DLOCK_OK);
    assert_int_equal(rel_a.calls, 0);
    RUN_LOOP_UNTIL(a.loop, ok, acq_b.calls > 0, test_prompt_ms());
    assert_true(ok);
    ASSERT_RC(rel_a.status, DLOCK_OK);
    ASSERT_RC(acq_b.status, DLOCK_OK);
    assert_true(rel_a.order < acq_b.order);
    ASSERT_BETWEEN(acq_b.at_ms - rel_a.at_ms, 0, test_prompt_ms());
    expect_holder(&a, OWNER_B, 1);

    ASSERT_RC(dlock_lock_release_async(a.l, OWNER_B, record_done, &rel_b), DLOCK_OK);
    assert_int_equal(rel_b.calls, 0);
    RUN_LOOP_UNTIL(a.loop, ok, rel_b.calls > 0, slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(rel_b.status, DLOCK_OK);
    assert_int_equal(redis_fixture_int(a.f, "EXISTS async-handoff"), 0);
    run_loop_for(a.loop, 100); /* nothing is called twice */
    assert_int_equal(acq_a.calls, 1);
    assert_int_equal(acq_b.calls, 1);
    assert_int_equal(rel_a.calls, 1);
    assert_int_equal(rel_b.calls, 1);
    assert_int_equal(callbacks_so_far, 4);
    printf("# async hand-off A -> B: %lld ms\n", (long long)(acq_b.at_ms - rel_a.at_ms));
    app_close(&a);
}

static void
test_async_release_by_an_owner_that_holds_nothing_is_enotowner_through_the_callback(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    loop_app a;
    app_open(&a, NULL, 1);
    ASSERT_RC(dlock_lock_new(a.c, "async-notowner", &a.l), DLOCK_OK);
    callbacks_so_far = 0;
    done acq_a = {0}, rel_c = {0}, rel_a = {0}, rel_again = {0};
    bool ok = false;
    ASSERT_RC(dlock_lock_acquire_async(a.l, OWNER_A, 0, 30000, record_done, &acq_a), DLOCK_OK);
    RUN_LOOP_UNTIL(a.loop, ok, acq_a.calls > 0, slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(acq_a.status, DLOCK_OK);

    ASSERT_RC(dlock_lock_release_async(a.l, OWNER_C, record_done, &rel_c), DLOCK_OK);
    assert_int_equal(rel_c.calls, 0);
    RUN_LOOP_UNTIL(a.loop, ok, rel_c.calls > 0, slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(rel_c.status, DLOCK_ENOTOWNER);
    expect_holder(&a, OWNER_A, 1); /* nothing changed */

    ASSERT_RC(dlock_lock_release_async(a.l, OWNER_A, record_done, &rel_a), DLOCK_OK);
    RUN_LOOP_UNTIL(a.loop, ok, rel_a.calls > 0, slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(rel_a.status, DLOCK_OK);
    /* A's hold is gone: a second release is not an owner's either */
    ASSERT_RC(dlock_lock_release_async(a.l, OWNER_A, record_done, &rel_again), DLOCK_OK);
    RUN_LOOP_UNTIL(a.loop, ok, rel_again.calls > 0, slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(rel_again.status, DLOCK_ENOTOWNER);
    run_loop_for(a.loop, 50);
    assert_int_equal(callbacks_so_far, 4);
    app_close(&a);
}

static void test_async_acquire_with_wait_0_on_a_held_lock_calls_back_etimedout(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    loop_app a;
    app_open(&a, NULL, 1);
    ASSERT_RC(dlock_lock_new(a.c, "async-busy", &a.l), DLOCK_OK);
    callbacks_so_far = 0;
    done acq_a = {0}, acq_b = {0}, rel_a = {0};
    bool ok = false;
    ASSERT_RC(dlock_lock_acquire_async(a.l, OWNER_A, 0, 30000, record_done, &acq_a), DLOCK_OK);
    RUN_LOOP_UNTIL(a.loop, ok, acq_a.calls > 0, slack_ms(5000));
    assert_true(ok);
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_acquire_async(a.l, OWNER_B, 0, 30000, record_done, &acq_b), DLOCK_OK);
    RUN_LOOP_UNTIL(a.loop, ok, acq_b.calls > 0, slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(acq_b.status, DLOCK_ETIMEDOUT);
    /* at once: a wait would last until A's 30 s lease runs out */
    ASSERT_BETWEEN(acq_b.at_ms - start, 0, test_prompt_ms());
    expect_holder(&a, OWNER_A, 1);
    ASSERT_RC(dlock_lock_release_async(a.l, OWNER_A, record_done, &rel_a), DLOCK_OK);
    RUN_LOOP_UNTIL(a.loop, ok, rel_a.calls > 0, slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(rel_a.status, DLOCK_OK);
    app_close(&a);
}

static void test_async_owner_0_or_null_callback_is_einval_without_io(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    loop_app a;
    app_open(&a, NULL, 1);
    ASSERT_RC(dlock_lock_new(a.c, "async-einval", &a.l), DLOCK_OK);
    callbacks_so_far = 0;
    done d = {0};
    long long before = redis_fixture_info_int(a.f, "stats", "total_commands_processed");
    ASSERT_RC(dlock_lock_acquire_async(a.l, 0, 0, 1000, record_done, &d), DLOCK_EINVAL);
    ASSERT_RC(dlock_lock_acquire_async(a.l, OWNER_A, 0, 1000, NULL, &d), DLOCK_EINVAL);
    ASSERT_RC(dlock_lock_acquire_async(NULL, OWNER_A, 0, 1000, record_done, &d), DLOCK_EINVAL);
    ASSERT_RC(dlock_lock_acquire_async(a.l, OWNER_A, -2, 1000, record_done, &d), DLOCK_EINVAL);
    ASSERT_RC(dlock_lock_acquire_async(a.l, OWNER_A, 0, 0, record_done, &d), DLOCK_EINVAL);
    ASSERT_RC(dlock_lock_acquire_async(a.l, OWNER_A, 0, -5, record_done, &d), DLOCK_EINVAL);
    ASSERT_RC(dlock_lock_release_async(a.l, 0, record_done, &d), DLOCK_EINVAL);
    ASSERT_RC(dlock_lock_release_async(a.l, OWNER_A, NULL, &d), DLOCK_EINVAL);
    ASSERT_RC(dlock_lock_release_async(NULL, OWNER_A, record_done, &d), DLOCK_EINVAL);
    run_loop_for(a.loop, 100);
    assert_int_equal(d.calls, 0); /* a call that returned an error never calls back */
    long long after = redis_fixture_info_int(a.f, "stats", "total_commands_processed");
    assert_int_equal(after - before, 1); /* only the first INFO */
    assert_int_equal(redis_fixture_int(a.f, "DBSIZE"), 0);
    app_close(&a);
}

static void test_async_watchdog_hold_is_renewed_on_the_application_loop(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    loop_app a;
    app_open(&a, &(test_client_cfg){.watchdog_ms = TEST_WATCHDOG_MS}, 1);
    ASSERT_RC(dlock_lock_new(a.c, "async-renewed", &a.l), DLOCK_OK);
    done acq = {0}, rel = {0};
    bool ok = false;
    ASSERT_RC(dlock_lock_acquire_async(a.l, OWNER_A, 0, DLOCK_WATCHDOG, record_done, &acq),
              DLOCK_OK);
    RUN_LOOP_UNTIL(a.loop, ok, acq.calls > 0, slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(acq.status, DLOCK_OK);
    /* two lease periods with the loop running: the PTTL never runs out */
    int64_t start = test_now_ms();
    long long lowest = TEST_WATCHDOG_MS;
    while (test_now_ms() - start < 2 * TEST_WATCHDOG_MS) {
        run_loop_for(a.loop, 100);
        long long pttl = redis_fixture_int(a.f, "PTTL async-renewed");
        ASSERT_BETWEEN(pttl, 1, TEST_WATCHDOG_MS);
        if (pttl < lowest)
            lowest = pttl;
    }
    expect_holder(&a, OWNER_A, 1);
    ASSERT_RC(dlock_lock_release_async(a.l, OWNER_A, record_done, &rel), DLOCK_OK);
    RUN_LOOP_UNTIL(a.loop, ok, rel.calls > 0, slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(rel.status, DLOCK_OK);
    printf("# async watchdog %d ms: lowest PTTL %lld ms over two periods\n", TEST_WATCHDOG_MS,
           lowest);
    app_close(&a);
}

static void test_lock_free_with_a_waiting_async_acquire_calls_it_back_canceled_once(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    loop_app a;
    app_open(&a, NULL, 1);
    ASSERT_RC(dlock_lock_new(a.c, "async-canceled", &a.l), DLOCK_OK);
    done acq_a = {0}, acq_b = {0};
    bool ok = false;
    ASSERT_RC(dlock_lock_acquire_async(a.l, OWNER_A, 0, 30000, record_done, &acq_a), DLOCK_OK);
    RUN_LOOP_UNTIL(a.loop, ok, acq_a.calls > 0, slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(acq_a.status, DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire_async(a.l, OWNER_B, DLOCK_FOREVER, 30000, record_done, &acq_b),
              DLOCK_OK);
    RUN_LOOP_UNTIL(a.loop, ok, numsub(a.f, "redisson_lock__channel:{async-canceled}") == 1,
                   slack_ms(5000));
    assert_true(ok);
    dlock_lock_free(a.l);
    a.l = NULL;
    assert_int_equal(acq_b.calls, 0); /* not inside the call */
    RUN_LOOP_UNTIL(a.loop, ok, acq_b.calls > 0, slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(acq_b.status, DLOCK_ECANCELED);
    RUN_LOOP_UNTIL(a.loop, ok, numsub(a.f, "redisson_lock__channel:{async-canceled}") == 0,
                   slack_ms(2000));
    assert_true(ok);
    run_loop_for(a.loop, 50);
    assert_int_equal(acq_b.calls, 1);
    /* A's hold stays in Redis until its lease runs out: free does no I/O */
    assert_int_equal(redis_fixture_int(a.f, "EXISTS async-canceled"), 1);
    app_close(&a); /* dlock_lock_free(NULL) is a no-op */
}

/* An acquire callback that reads its owner's token at once, on the loop thread. */
typedef struct token_seen {
    done d;
    uint64_t owner;
    int token_rc;
    uint64_t token;
} token_seen;

static void record_token(dlock_lock *l, int status, void *arg) {
    token_seen *t = arg;
    record_done(l, status, &t->d);
    t->token_rc = dlock_lock_token_of(l, t->owner, &t->token);
}

static void test_async_token_of_each_owner_is_readable_in_its_acquire_callback(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    loop_app a;
    app_open(&a, NULL, 1);
    ASSERT_RC(dlock_fencedlock_new(a.c, "async-fenced", &a.l), DLOCK_OK);
    token_seen ta = {.owner = OWNER_A}, tb = {.owner = OWNER_B}, ta2 = {.owner = OWNER_A};
    done rel = {0};
    bool ok = false;
    uint64_t token = 0;
    ASSERT_RC(dlock_lock_token_of(a.l, OWNER_A, &token), DLOCK_ENOTOWNER); /* none yet */
    ASSERT_RC(dlock_lock_acquire_async(a.l, OWNER_A, 0, 30000, record_token, &ta), DLOCK_OK);
    RUN_LOOP_UNTIL(a.loop, ok, ta.d.calls > 0, slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(ta.d.status, DLOCK_OK);
    ASSERT_RC(ta.token_rc, DLOCK_OK);
    assert_int_equal(ta.token, 1);
    /* reentrant: a token of its own */
    ASSERT_RC(dlock_lock_acquire_async(a.l, OWNER_A, 0, 30000, record_token, &ta2), DLOCK_OK);
    RUN_LOOP_UNTIL(a.loop, ok, ta2.d.calls > 0, slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(ta2.token_rc, DLOCK_OK);
    assert_int_equal(ta2.token, 2);
    for (int i = 0; i < 2; i++) {
        rel = (done){0};
        ASSERT_RC(dlock_lock_release_async(a.l, OWNER_A, record_done, &rel), DLOCK_OK);
        RUN_LOOP_UNTIL(a.loop, ok, rel.calls > 0, slack_ms(5000));
        assert_true(ok);
        ASSERT_RC(rel.status, DLOCK_OK);
    }
    ASSERT_RC(dlock_lock_acquire_async(a.l, OWNER_B, 0, 30000, record_token, &tb), DLOCK_OK);
    RUN_LOOP_UNTIL(a.loop, ok, tb.d.calls > 0, slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(tb.token_rc, DLOCK_OK);
    assert_int_equal(tb.token, 3);
    /* A keeps the token of its latest acquisition; C never acquired */
    ASSERT_RC(dlock_lock_token_of(a.l, OWNER_A, &token), DLOCK_OK);
    assert_int_equal(token, 2);
    ASSERT_RC(dlock_lock_token_of(a.l, OWNER_C, &token), DLOCK_ENOTOWNER);
    assert_int_equal(redis_fixture_int(a.f, "GET redisson_lock_token:{async-fenced}"), 3);
    rel = (done){0};
    ASSERT_RC(dlock_lock_release_async(a.l, OWNER_B, record_done, &rel), DLOCK_OK);
    RUN_LOOP_UNTIL(a.loop, ok, rel.calls > 0, slack_ms(5000));
    assert_true(ok);
    app_close(&a);
}

int main(void) {
    signal(SIGPIPE, SIG_IGN); /* the adapter's rule for the application's loop thread */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_async_second_owner_waits_until_the_first_releases_then_gets_the_lock),
        cmocka_unit_test(
            test_async_release_by_an_owner_that_holds_nothing_is_enotowner_through_the_callback),
        cmocka_unit_test(test_async_acquire_with_wait_0_on_a_held_lock_calls_back_etimedout),
        cmocka_unit_test(test_async_owner_0_or_null_callback_is_einval_without_io),
        cmocka_unit_test(test_async_watchdog_hold_is_renewed_on_the_application_loop),
        cmocka_unit_test(test_lock_free_with_a_waiting_async_acquire_calls_it_back_canceled_once),
        cmocka_unit_test(test_async_token_of_each_owner_is_readable_in_its_acquire_callback),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
