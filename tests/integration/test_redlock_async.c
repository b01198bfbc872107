/* SPDX-License-Identifier: MIT */
/* test_redlock_async.c — the RedLock's async face (dlock_lock_acquire_async /
 * dlock_lock_release_async on a dlock_redlock_new handle), against five real
 * redis-servers, the members' clients on the application's own libev loop (polled by the
 * test thread) or on clients of their own.
 *
 * What is proven: acquire and release through callbacks, each called once and never inside
 * the call, a quorum taken at once and every member held soon after, release freeing them
 * all; a blocking call on the loop thread of a member's client is DLOCK_EDEADLK; the
 * callback runs on the loop thread of the first member's client, whichever client that is;
 * a try with three of five masters held elsewhere ends once with DLOCK_ETIMEDOUT and, by
 * then, has given back what the two others granted; a query with two masters paused costs
 * one command time-out, not two (the members are asked at once); freeing the RedLock with
 * a round in flight ends it once with DLOCK_ECANCELED, gives back what the live masters
 * granted and, once the paused ones answer, what they granted too.
 *
 * Every test starts its own servers. Callbacks on another client's thread write atomics. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core_call.h"
#include "dlock.h"
#include "dlock/adapters/libev.h"
#include "harness.h"
#include "redis_fixture.h"
#include "test_util.h"

#define BUDGET_S 60
#define N 5
#define NAME "rla"
#define OWNER 4242u

/* ---- a RedLock whose members' clients are on the test's loop ---------------------------- */

typedef struct loop_redlock {
    redis_fixture *f[N];
    struct ev_loop *loop;
    ev_timer tick;
    dlock_client *c[N];
    dlock_lock *member[N];
    dlock_lock *rl;
    int on_loop; /* members 0..on_loop-1 have their client on the loop */
} loop_redlock;

/* Masters 0..on_loop-1 get a client on the test's loop, the others a client of their own. */
static void open_redlock(loop_redlock *a, int on_loop, const test_client_cfg *cfg) {
    memset(a, 0, sizeof(*a));
    masters_start(a->f, N);
    a->on_loop = on_loop;
    a->loop = polling_loop_new(&a->tick);
    for (int i = 0; i < N; i++) {
        if (i < on_loop) {
            a->c[i] = connect_on_loop(a->f[i], a->loop);
            sync_with_client(a->loop, a->c[i], test_slack_ms(5000));
        } else {
            a->c[i] = connect_client_cfg(a->f[i], cfg ? *cfg : (test_client_cfg){0});
        }
        ASSERT_RC(dlock_lock_new(a->c[i], NAME, &a->member[i]), DLOCK_OK);
    }
    ASSERT_RC(dlock_redlock_new(a->member, N, &a->rl), DLOCK_OK);
}

static void close_redlock(loop_redlock *a) {
    dlock_lock_free(a->rl);
    for (int i = 0; i < N; i++)
        dlock_lock_free(a->member[i]);
    for (int i = 0; i < a->on_loop; i++) /* a free on the loop thread is queued */
        sync_with_client(a->loop, a->c[i], test_slack_ms(5000));
    for (int i = 0; i < N; i++)
        ASSERT_RC(dlock_client_free(a->c[i]), DLOCK_OK);
    polling_loop_free(a->loop, &a->tick);
    masters_stop(a->f, N);
}

/* Masters from..N-1 where OWNER holds NAME through client c[i]. */
static int held_from(loop_redlock *a, int from) {
    int n = 0;
    for (int i = from; i < N; i++) {
        char field[128];
        owner_field(a->c[i], OWNER, field, sizeof(field));
        n += redis_fixture_int(a->f[i], "HEXISTS " NAME " %s", field) == 1;
    }
    return n;
}

static int held_by_owner(loop_redlock *a) {
    return held_from(a, 0);
}

static int present(loop_redlock *a) {
    int n = 0;
    for (int i = 0; i < N; i++)
        n += redis_fixture_int(a->f[i], "EXISTS " NAME) == 1;
    return n;
}

/* ---- callbacks ---------------------------------------------------------------------------- */

typedef struct done {
    atomic_int calls;
    atomic_int status;
    pthread_t thread;
} done;

static void record_done(dlock_lock *l, int status, void *arg) {
    (void)l;
    done *d = arg;
    d->thread = pthread_self();
    atomic_store(&d->status, status);
    atomic_fetch_add(&d->calls, 1);
}

static void record_ping(dlock_client *c, int status, void *arg) {
    record_done(NULL, status, arg);
    (void)c;
}

/* The loop thread of a client with an I/O thread of its own. */
static pthread_t loop_thread_of(dlock_client *c) {
    done d = {0};
    ASSERT_RC(dlock_client_ping_async(c, record_ping, &d), DLOCK_OK);
    bool ok = false;
    POLL_UNTIL(ok, atomic_load(&d.calls) == 1, test_slack_ms(5000));
    assert_true(ok);
    return d.thread;
}

/* Runs the loop until d's callback ran; its status. */
static int wait_done(loop_redlock *a, done *d) {
    bool ok = false;
    RUN_LOOP_UNTIL(a->loop, ok, atomic_load(&d->calls) > 0, test_slack_ms(10000));
    assert_true(ok);
    return atomic_load(&d->status);
}

/* ---- tests ------------------------------------------------------------------------------- */

static void test_async_acquire_takes_a_quorum_and_release_frees_every_member(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    loop_redlock a;
    open_redlock(&a, N, NULL);
    done acq = {0}, rel = {0}, again = {0};
    ASSERT_RC(dlock_lock_acquire_async(a.rl, OWNER, 0, 20000, record_done, &acq), DLOCK_OK);
    assert_int_equal(atomic_load(&acq.calls), 0); /* never inside the call */
    ASSERT_RC(wait_done(&a, &acq), DLOCK_OK);
    assert_true(pthread_equal(acq.thread, pthread_self()));
    assert_true(held_by_owner(&a) >= 3);
    bool ok = false; /* the members after the quorum join */
    RUN_LOOP_UNTIL(a.loop, ok, held_by_owner(&a) == N, test_slack_ms(5000));
    assert_true(ok);
    /* the composite's own record is read on its loop thread at once */
    int64_t holds = -1;
    uint64_t token = 0;
    ASSERT_RC(dlock_lock_token_of(a.rl, OWNER, &token), DLOCK_EINVAL); /* plain members */
    /* a blocking call on a member's loop thread would wait for itself */
    ASSERT_RC(dlock_lock_try_acquire(a.rl, 0, 1000), DLOCK_EDEADLK);
    bool locked = false;
    ASSERT_RC(dlock_lock_is_locked(a.rl, &locked), DLOCK_EDEADLK);
    ASSERT_RC(dlock_lock_hold_count(a.rl, &holds), DLOCK_OK);
    assert_int_equal(holds, 0); /* the test thread is not OWNER */

    ASSERT_RC(dlock_lock_release_async(a.rl, OWNER, record_done, &rel), DLOCK_OK);
    assert_int_equal(atomic_load(&rel.calls), 0);
    ASSERT_RC(wait_done(&a, &rel), DLOCK_OK);
    RUN_LOOP_UNTIL(a.loop, ok, present(&a) == 0, test_slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(dlock_lock_release_async(a.rl, OWNER, record_done, &again), DLOCK_OK);
    ASSERT_RC(wait_done(&a, &again), DLOCK_ENOTOWNER);
    run_loop_for(a.loop, 50);
    assert_int_equal(atomic_load(&acq.calls), 1);
    assert_int_equal(atomic_load(&rel.calls), 1);
    assert_int_equal(atomic_load(&again.calls), 1);
    close_redlock(&a);
}

static void test_the_callback_runs_on_the_loop_thread_of_the_first_members_client(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    loop_redlock a;
    open_redlock(&a, 1, NULL); /* member 0 on the test's loop, the others on their own */
    done acq = {0}, rel = {0};
    ASSERT_RC(dlock_lock_acquire_async(a.rl, OWNER, 0, 20000, record_done, &acq), DLOCK_OK);
    ASSERT_RC(wait_done(&a, &acq), DLOCK_OK);
    assert_true(pthread_equal(acq.thread, pthread_self()));
    ASSERT_RC(dlock_lock_release_async(a.rl, OWNER, record_done, &rel), DLOCK_OK);
    ASSERT_RC(wait_done(&a, &rel), DLOCK_OK);
    assert_true(pthread_equal(rel.thread, pthread_self()));
    dlock_lock_free(a.rl);

    /* the same members, member 2 first: its client's I/O thread */
    dlock_lock *order[N] = {a.member[2], a.member[0], a.member[1], a.member[3], a.member[4]};
    ASSERT_RC(dlock_redlock_new(order, N, &a.rl), DLOCK_OK);
    pthread_t io2 = loop_thread_of(a.c[2]);
    assert_false(pthread_equal(io2, pthread_self()));
    done acq2 = {0}, rel2 = {0};
    ASSERT_RC(dlock_lock_acquire_async(a.rl, OWNER, 0, 20000, record_done, &acq2), DLOCK_OK);
    ASSERT_RC(wait_done(&a, &acq2), DLOCK_OK);
    assert_true(pthread_equal(acq2.thread, io2));
    ASSERT_RC(dlock_lock_release_async(a.rl, OWNER, record_done, &rel2), DLOCK_OK);
    ASSERT_RC(wait_done(&a, &rel2), DLOCK_OK);
    assert_true(pthread_equal(rel2.thread, io2));
    bool ok = false;
    RUN_LOOP_UNTIL(a.loop, ok, present(&a) == 0, test_slack_ms(5000));
    assert_true(ok);
    close_redlock(&a);
}

static void
test_async_try_with_three_masters_held_elsewhere_times_out_once_and_gave_back(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    loop_redlock a;
    open_redlock(&a, N, NULL);
    dlock_client *oc[3];
    dlock_lock *ol[3];
    for (int i = 0; i < 3; i++) {
        oc[i] = connect_client(a.f[i]);
        ASSERT_RC(dlock_lock_new(oc[i], NAME, &ol[i]), DLOCK_OK);
        ASSERT_RC(dlock_lock_acquire(ol[i], 30000), DLOCK_OK);
    }
    done acq = {0};
    ASSERT_RC(dlock_lock_acquire_async(a.rl, OWNER, 0, 10000, record_done, &acq), DLOCK_OK);
    ASSERT_RC(wait_done(&a, &acq), DLOCK_ETIMEDOUT);
    /* Masters 3 and 4 say yes. The round is lost as soon as 0-2 said no, so one of them
     * may not have answered by then: a yes given before the callback was given back
     * before it, a later one gives itself back after it. Wait for the state, not the
     * order. */
    bool given_back = false;
    RUN_LOOP_UNTIL(a.loop, given_back, held_by_owner(&a) == 0, test_slack_ms(5000));
    assert_true(given_back);
    run_loop_for(a.loop, 100);
    assert_int_equal(atomic_load(&acq.calls), 1);
    for (int i = 0; i < 3; i++) {
        ASSERT_RC(dlock_lock_release(ol[i]), DLOCK_OK);
        dlock_lock_free(ol[i]);
        ASSERT_RC(dlock_client_free(oc[i]), DLOCK_OK);
    }
    close_redlock(&a);
}

static void test_a_query_with_two_masters_paused_costs_one_time_out_not_two(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    const int64_t timeout = 1000; /* per command, no resend: a paused master costs this */
    test_client_cfg cfg = {.timeout_ms = timeout, .retry_attempts = TEST_NO_RETRY};
    loop_redlock a;
    open_redlock(&a, 0, &cfg);
    ASSERT_RC(dlock_lock_acquire(a.rl, 30000), DLOCK_OK);
    for (int i = 3; i < N; i++)
        assert_int_equal(redis_fixture_pause(a.f[i]), 0);
    bool locked = false, held = false;
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_is_locked(a.rl, &locked), DLOCK_OK);
    int64_t is_locked_ms = test_now_ms() - start;
    start = test_now_ms();
    ASSERT_RC(dlock_lock_is_held(a.rl, &held), DLOCK_OK);
    int64_t is_held_ms = test_now_ms() - start;
    for (int i = 3; i < N; i++)
        assert_int_equal(redis_fixture_resume(a.f[i]), 0);
    printf("# 2 of 5 paused, time-out %lld ms: is_locked %lld ms, is_held %lld ms\n",
           (long long)timeout, (long long)is_locked_ms, (long long)is_held_ms);
    assert_true(locked); /* 3 of 5 answered locked */
    assert_true(held);
    /* asked one after another, the two paused masters would cost two time-outs */
    ASSERT_BETWEEN(is_locked_ms, timeout - 100, timeout * 3 / 2);
    ASSERT_BETWEEN(is_held_ms, 0, timeout * 3 / 2);
    ASSERT_RC(dlock_lock_release(a.rl), DLOCK_OK);
    close_redlock(&a);
}

static void test_freeing_it_with_a_round_in_flight_ends_it_once_canceled_and_gives_everything_back(
    void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    loop_redlock a;
    open_redlock(&a, N, NULL);
    for (int i = 0; i < 3; i++) /* no quorum until the round's budget (1 s) runs out */
        assert_int_equal(redis_fixture_pause(a.f[i]), 0);
    done acq = {0};
    ASSERT_RC(dlock_lock_acquire_async(a.rl, OWNER, DLOCK_FOREVER, 10000, record_done, &acq),
              DLOCK_OK);
    bool ok = false;
    RUN_LOOP_UNTIL(a.loop, ok, held_from(&a, 3) == 2, test_slack_ms(5000)); /* 3 and 4 */
    assert_true(ok);
    assert_int_equal(atomic_load(&acq.calls), 0);
    dlock_lock_free(a.rl); /* on the loop thread: returns at once */
    a.rl = NULL;
    ASSERT_RC(wait_done(&a, &acq), DLOCK_ECANCELED);
    RUN_LOOP_UNTIL(a.loop, ok, held_from(&a, 3) == 0, test_slack_ms(5000));
    assert_true(ok);
    /* the paused masters run their acquires on resume; the releases handed to them follow */
    for (int i = 0; i < 3; i++)
        assert_int_equal(redis_fixture_resume(a.f[i]), 0);
    RUN_LOOP_UNTIL(a.loop, ok, present(&a) == 0, test_slack_ms(10000));
    assert_true(ok);
    run_loop_for(a.loop, 100);
    assert_int_equal(atomic_load(&acq.calls), 1);
    close_redlock(&a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_async_acquire_takes_a_quorum_and_release_frees_every_member),
        cmocka_unit_test(test_the_callback_runs_on_the_loop_thread_of_the_first_members_client),
        cmocka_unit_test(
            test_async_try_with_three_masters_held_elsewhere_times_out_once_and_gave_back),
        cmocka_unit_test(test_a_query_with_two_masters_paused_costs_one_time_out_not_two),
        cmocka_unit_test(
            test_freeing_it_with_a_round_in_flight_ends_it_once_canceled_and_gives_everything_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
