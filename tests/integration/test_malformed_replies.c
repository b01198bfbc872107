/* SPDX-License-Identifier: MIT */
/* test_malformed_replies.c — replies dlock must survive, against a real redis-server: values
 * at the edge of what a script or a waiter can be told (a remaining lease of INT64_MAX, a
 * hold count of INT64_MAX, a fencing counter that went back) neither overflow nor come back
 * as DLOCK_OK with a state that is not Redis's.
 *
 * Replies of the wrong shape per script (a string, +OK, nil, [], a nested array, {1},
 * {1, 0}, {1, -5}, {1, "1", "7"}) come from tests/support/reply_injector.h, a proxy in front
 * of the server that answers one chosen command in their place: each call is DLOCK_EREDIS
 * naming what arrived, a busy lock's waiter neither takes it for a hold nor spins, and a
 * DLOCK_FOREVER wait ends. (The shapes alone: tests/unit/test_reply_shape.c.) */
#include "wait_helpers.h"

#include "dlock/latch.h"
#include "dlock/lock.h"
#include "dlock/rwlock.h"
#include "dlock/semaphore.h"
#include "reply_injector.h"

/* A busy hint of INT64_MAX ms (a lease another client set, or a server that says so) is
 * "not before the deadline": the waiter sleeps until then. The sum now + hint overflowed
 * (UBSan: signed overflow in wait.c), and wrapped below now: the waiter attempted back to
 * back until its deadline. */
static void test_a_busy_hint_of_int64_max_sleeps_until_the_deadline(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    test_waiter *t[2] = {
        waiter_reset(0, "huge:{hint}", NULL, 300, INT64_MAX, &ops_wake_one),
        waiter_reset(1, "huge:{hint}", "huge:{hint}:channel", 300, INT64_MAX, &ops_wake_one),
    };
    start_waiters(w->c, t, 2);
    bool ok = false;
    POLL_UNTIL(ok, done_calls_of(t[0]) == 1 && done_calls_of(t[1]) == 1, test_slack_ms(3000));
    assert_true(ok);
    for (int i = 0; i < 2; i++) {
        seen s = look(t[i]);
        assert_int_equal(s.done_status, DLOCK_ETIMEDOUT);
        assert_true(s.done_ms - s.started_ms >= 300);
        /* the first attempt, one once subscribed (with a channel), one at the deadline */
        assert_in_range(s.attempts, 1, 3);
    }
}

/* Redis counts the owner's holds at INT64_MAX (its own HINCRBY got there): acquire.lua's
 * reply carries the count through a Lua number, which cannot hold it, and Redis answers
 * INT64_MIN. That is no hold count: DLOCK_EREDIS, nothing recorded, no loss reported (the
 * client took a count of INT64_MIN for the owner's and said DLOCK_OK). */
static void test_a_hold_count_a_script_cannot_say_is_eredis_and_nothing_recorded(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    dlock_lock *l;
    ASSERT_OK(dlock_lock_new(w->c, "huge-holds", &l));
    lost_reset();
    ASSERT_OK(dlock_lock_on_lost(l, record_lost, NULL));
    char field[128];
    owner_field(w->c, dlock_thread_owner(), field, sizeof(field));
    redis_fixture_int(w->f, "HSET huge-holds %s 9223372036854775806", field);

    assert_int_equal(dlock_lock_try_acquire(l, 0, 60000), DLOCK_EREDIS);
    assert_non_null(strstr(dlock_last_error(), "the integer -9223372036854775808"));
    assert_int_equal(lost_get().calls, 0);
    assert_int_equal(hget_int(w->f, "huge-holds", field), INT64_MAX);
    dlock_lock_free(l);
}

/* The fencing counter went back (a server that lost it, a reset by hand): the token the
 * script hands out is not above the owner's last one, so it fences nothing. The acquire is
 * DLOCK_EREDIS naming the token; the client keeps the old token and registers no lease: the
 * hold the script wrote runs out with its lease (the watchdog's, 300 ms), never renewed. */
static void test_a_fenced_token_that_does_not_rise_is_eredis_and_not_renewed(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    dlock_lock *l;
    ASSERT_OK(dlock_fencedlock_new(w->c, "sinking", &l));
    /* a lease of its own, not the 300 ms watchdog's: a machine busy enough to hold the
     * renewal back past 300 ms (valgrind beside stress did) would lose this hold before its
     * release, which is not what this test is about */
    ASSERT_OK(dlock_lock_acquire(l, 60000));
    uint64_t first = 0;
    ASSERT_OK(dlock_lock_token(l, &first));
    ASSERT_OK(dlock_lock_release(l));
    redis_fixture_int(w->f, "DEL redisson_lock_token:{sinking}");

    assert_int_equal(dlock_lock_try_acquire(l, 1000, DLOCK_WATCHDOG), DLOCK_EREDIS);
    const char *text = dlock_last_error();
    assert_non_null(strstr(text, "unexpected reply"));
    assert_non_null(strstr(text, "the integer 1]"));
    uint64_t token = 0;
    ASSERT_OK(dlock_lock_token(l, &token));
    assert_int_equal(token, first);
    bool gone = false;
    POLL_UNTIL(gone, redis_fixture_int(w->f, "EXISTS sinking") == 0, test_slack_ms(3000));
    assert_true(gone);
    dlock_lock_free(l);
}

static int setup_short_watchdog(void **state) {
    return test_world_setup_cfg(state, (test_client_cfg){.watchdog_ms = 300});
}

/* ---- wrong shapes, through the injector ----------------------------------------------- */

static const char *const wrong_shapes[] = {
    "$2\r\nOK\r\n",
    "+OK\r\n",
    "$-1\r\n",
    "*0\r\n",
    "*2\r\n*2\r\n:1\r\n:1\r\n:0\r\n",
    "*1\r\n:1\r\n",
    "*2\r\n:1\r\n:0\r\n",
    "*2\r\n:1\r\n:-5\r\n",
    "*3\r\n:1\r\n$1\r\n1\r\n$1\r\n7\r\n",
};
#define NSHAPES (sizeof(wrong_shapes) / sizeof(wrong_shapes[0]))

typedef struct injected {
    reply_injector *injector;
    dlock_client *c; /* through the injector */
} injected;

static injected inject_start(world *w) {
    injected in = {0};
    assert_int_equal(reply_injector_start(redis_fixture_socket(w->f), &in.injector), 0);
    test_client_cfg cfg = {.url = reply_injector_url(in.injector), .watchdog_ms = 300};
    ASSERT_OK(test_client_new(w->f, &cfg, &in.c));
    return in;
}

static void inject_stop(injected *in) {
    ASSERT_OK(dlock_client_free(in->c));
    reply_injector_stop(in->injector);
}

/* The next command naming `name` gets `bytes` for its reply. */
static void answer_next(injected *in, const char *name, const char *bytes) {
    reply_injector_replace(in->injector, name, bytes, strlen(bytes));
}

static void expect_bad_reply(int rc, const char *shape) {
    assert_int_equal(rc, DLOCK_EREDIS);
    const char *text = dlock_last_error();
    if (!strstr(text, "unexpected reply from Redis"))
        fail_msg("reply %s: %s", shape, text);
}

typedef enum { PLAIN, FENCED, FAIR, READ, WRITE } lock_kind;

static dlock_lock *lock_of(dlock_client *c, lock_kind kind, const char *name, dlock_rwlock **rw) {
    dlock_lock *l = NULL;
    *rw = NULL;
    if (kind == PLAIN)
        ASSERT_OK(dlock_lock_new(c, name, &l));
    else if (kind == FENCED)
        ASSERT_OK(dlock_fencedlock_new(c, name, &l));
    else if (kind == FAIR)
        ASSERT_OK(dlock_fairlock_new(c, name, &l));
    else
        ASSERT_OK(dlock_rwlock_new(c, name, rw));
    return *rw ? (kind == READ ? dlock_rwlock_read(*rw) : dlock_rwlock_write(*rw)) : l;
}

static void lock_free(dlock_lock *l, dlock_rwlock *rw) {
    if (rw)
        dlock_rwlock_free(rw);
    else
        dlock_lock_free(l);
}

/* Another client holds the lock (a plain lease: it renews nothing); a waiter through the
 * injector gets a wrong shape in place of "busy". It is DLOCK_EREDIS at once, not a hold and
 * not "busy, again now": the server ran a handful of scripts, the waiter holds nothing, and
 * no renewal follows (300 ms watchdog: a window of 3 ticks proves none is sent). Before,
 * {1, ...} was a hold (DLOCK_OK), and anything else "busy" with no delay. */
static void busy_lock_answered_with_wrong_shapes(world *w, lock_kind kind, const char *name) {
    injected in = inject_start(w);
    dlock_rwlock *hrw, *wrw;
    dlock_lock *holder = lock_of(w->c, kind == READ ? WRITE : kind, name, &hrw);
    ASSERT_OK(dlock_lock_acquire(holder, 60000));
    dlock_lock *waiter = lock_of(in.c, kind, name, &wrw);
    for (size_t i = 0; i < NSHAPES; i++) {
        long long scripts = script_calls(w->f);
        answer_next(&in, name, wrong_shapes[i]);
        int64_t t0 = test_now_ms();
        int rc = i == 0 ? dlock_lock_acquire(waiter, DLOCK_WATCHDOG)
                        : dlock_lock_try_acquire(waiter, TEST_SLOW_MS, DLOCK_WATCHDOG);
        expect_bad_reply(rc, wrong_shapes[i]);
        /* at once: "busy" would wait for the holder's 60 s lease or the TEST_SLOW_MS wait */
        assert_true(test_now_ms() - t0 < test_prompt_ms());
        assert_in_range(script_calls(w->f) - scripts, 1, 3); /* the attempt, a leave */
        bool held = true;
        ASSERT_OK(dlock_lock_is_held(waiter, &held));
        assert_false(held);
        int64_t count = -1;
        ASSERT_OK(dlock_lock_hold_count(waiter, &count));
        assert_int_equal(count, 0);
    }
    long long scripts = script_calls(w->f);
    test_sleep_ms(900); /* 3 watchdog ticks: nothing of the waiter's is renewed */
    assert_int_equal(script_calls(w->f), scripts);
    lock_free(waiter, wrw);
    lock_free(holder, hrw);
    inject_stop(&in);
}

static void test_wrong_shapes_for_a_busy_lock_are_eredis_without_a_hold_or_a_spin(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S * 4, __func__);
    busy_lock_answered_with_wrong_shapes(w, PLAIN, "inj-plain");
    busy_lock_answered_with_wrong_shapes(w, FENCED, "inj-fenced");
    busy_lock_answered_with_wrong_shapes(w, FAIR, "inj-fair");
    busy_lock_answered_with_wrong_shapes(w, READ, "inj-read");
    busy_lock_answered_with_wrong_shapes(w, WRITE, "inj-write");
}

/* A release, a semaphore's try-set and release, a latch's count-down answered with a wrong
 * shape: DLOCK_EREDIS naming what arrived, never DLOCK_OK. */
static void test_wrong_shapes_for_releases_try_sets_and_count_downs_are_eredis(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S * 2, __func__);
    injected in = inject_start(w);
    dlock_lock *l;
    ASSERT_OK(dlock_lock_new(in.c, "inj-release", &l));
    dlock_semaphore *s;
    ASSERT_OK(dlock_semaphore_new(in.c, "inj-sem", &s));
    dlock_latch *latch;
    ASSERT_OK(dlock_latch_new(in.c, "inj-latch", &latch));
    for (size_t i = 0; i < NSHAPES; i++) {
        ASSERT_OK(dlock_lock_acquire(l, 60000));
        answer_next(&in, "inj-release", wrong_shapes[i]);
        expect_bad_reply(dlock_lock_release(l), wrong_shapes[i]);
        redis_fixture_int(w->f, "DEL inj-release");

        bool was_set = false;
        answer_next(&in, "inj-sem", wrong_shapes[i]);
        expect_bad_reply(dlock_semaphore_try_set_permits(s, 3, &was_set), wrong_shapes[i]);
        answer_next(&in, "inj-sem", wrong_shapes[i]);
        expect_bad_reply(dlock_semaphore_release(s, 1), wrong_shapes[i]);

        ASSERT_OK(dlock_latch_try_set_count(latch, 2, &was_set));
        answer_next(&in, "inj-latch", wrong_shapes[i]);
        expect_bad_reply(dlock_latch_count_down(latch), wrong_shapes[i]);
        redis_fixture_int(w->f, "DEL inj-latch inj-sem");
    }
    dlock_latch_free(latch);
    dlock_semaphore_free(s);
    dlock_lock_free(l);
    inject_stop(&in);
}

/* A remaining lease of INT64_MAX in a busy reply (no server says that: the injector does):
 * the waiter sleeps until its deadline, without overflow. */
static void test_a_busy_reply_with_a_pttl_of_int64_max_waits_until_the_deadline(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    injected in = inject_start(w);
    dlock_lock *holder, *waiter;
    ASSERT_OK(dlock_lock_new(w->c, "inj-huge", &holder));
    ASSERT_OK(dlock_lock_acquire(holder, 60000));
    ASSERT_OK(dlock_lock_new(in.c, "inj-huge", &waiter));
    const char *huge = "*2\r\n:0\r\n:9223372036854775807\r\n";
    answer_next(&in, "inj-huge", huge);
    int64_t t0 = test_now_ms();
    assert_int_equal(dlock_lock_try_acquire(waiter, 300, DLOCK_WATCHDOG), DLOCK_ETIMEDOUT);
    assert_in_range(test_now_ms() - t0, 300, 300 + test_prompt_ms());
    dlock_lock_free(waiter);
    dlock_lock_free(holder);
    inject_stop(&in);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_busy_hint_of_int64_max_sleeps_until_the_deadline,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_hold_count_a_script_cannot_say_is_eredis_and_nothing_recorded, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_fenced_token_that_does_not_rise_is_eredis_and_not_renewed, setup_short_watchdog,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_wrong_shapes_for_a_busy_lock_are_eredis_without_a_hold_or_a_spin, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_wrong_shapes_for_releases_try_sets_and_count_downs_are_eredis, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_busy_reply_with_a_pttl_of_int64_max_waits_until_the_deadline, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
