/* SPDX-License-Identifier: MIT */
/* test_multilock_async.c — the MultiLock's async face (dlock_lock_acquire_async /
 * dlock_lock_release_async on a dlock_multilock_new handle), against three real
 * redis-servers, the members' clients on the application's own libev loop (polled by the
 * test thread) or on a client of its own.
 *
 * What is proven: acquire (also reentrant) and release through callbacks, each called once
 * and never inside the call, every member held by the owner when acquire answers and freed
 * when release answers; a blocking call on a member's loop thread is DLOCK_EDEADLK; the
 * callback runs on the loop thread of the first member's client (locks[0]); a try with a
 * member held elsewhere ends once with DLOCK_ETIMEDOUT having given back, before its
 * callback, every member it took; freeing the MultiLock while its acquire waits for a busy
 * member ends it once with DLOCK_ECANCELED, gives back the members it took, and gives back
 * the busy member too once that one is granted (its late yes gives itself back).
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
#define NSERVERS 3
#define OWNER 777u

static const char *const names[NSERVERS] = {"mla:a", "mla:b", "mla:c"};

/* ---- a MultiLock whose members' clients are on the test's loop -------------------------- */

typedef struct loop_multi {
    redis_fixture *f[NSERVERS];
    struct ev_loop *loop;
    ev_timer tick;
    dlock_client *c[NSERVERS];
    dlock_lock *member[NSERVERS];
    dlock_lock *m;
    bool own_thread[NSERVERS]; /* a client with an I/O thread of its own */
} loop_multi;

/* Member i on server i; its client on the test's loop unless own_thread[i]. */
static void open_multi(loop_multi *a, const bool own_thread[NSERVERS]) {
    memset(a, 0, sizeof(*a));
    masters_start(a->f, NSERVERS);
    a->loop = polling_loop_new(&a->tick);
    for (int i = 0; i < NSERVERS; i++) {
        a->own_thread[i] = own_thread && own_thread[i];
        if (a->own_thread[i]) {
            a->c[i] = connect_client(a->f[i]);
        } else {
            a->c[i] = connect_on_loop(a->f[i], a->loop);
            sync_with_client(a->loop, a->c[i], test_slack_ms(5000));
        }
        ASSERT_RC(dlock_lock_new(a->c[i], names[i], &a->member[i]), DLOCK_OK);
    }
    ASSERT_RC(dlock_multilock_new(a->member, NSERVERS, &a->m), DLOCK_OK);
}

static void close_multi(loop_multi *a) {
    dlock_lock_free(a->m);
    for (int i = 0; i < NSERVERS; i++)
        dlock_lock_free(a->member[i]);
    for (int i = 0; i < NSERVERS; i++)
        if (!a->own_thread[i]) /* a free on the loop thread is queued */
            sync_with_client(a->loop, a->c[i], test_slack_ms(5000));
    for (int i = 0; i < NSERVERS; i++)
        ASSERT_RC(dlock_client_free(a->c[i]), DLOCK_OK);
    polling_loop_free(a->loop, &a->tick);
    masters_stop(a->f, NSERVERS);
}

/* OWNER's holds of member i (0 if none). */
static long long holds_of(loop_multi *a, int i) {
    char field[128];
    owner_field(a->c[i], OWNER, field, sizeof(field));
    redisReply *r = redis_fixture_cmd(a->f[i], "HGET %s %s", names[i], field);
    assert_non_null(r);
    long long n = r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;
    freeReplyObject(r);
    return n;
}

static int members_with_holds(loop_multi *a, long long holds) {
    int n = 0;
    for (int i = 0; i < NSERVERS; i++)
        n += holds_of(a, i) == holds;
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
    (void)c;
    record_done(NULL, status, arg);
}

static int wait_done(loop_multi *a, done *d) {
    bool ok = false;
    RUN_LOOP_UNTIL(a->loop, ok, atomic_load(&d->calls) > 0, test_slack_ms(10000));
    assert_true(ok);
    return atomic_load(&d->status);
}

/* ---- tests ------------------------------------------------------------------------------- */

static void test_async_acquire_holds_every_member_and_release_frees_them(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    loop_multi a;
    open_multi(&a, NULL);
    done acq = {0}, again = {0}, rel1 = {0}, rel2 = {0};
    ASSERT_RC(dlock_lock_acquire_async(a.m, OWNER, DLOCK_FOREVER, 20000, record_done, &acq),
              DLOCK_OK);
    assert_int_equal(atomic_load(&acq.calls), 0); /* never inside the call */
    ASSERT_RC(wait_done(&a, &acq), DLOCK_OK);
    assert_true(pthread_equal(acq.thread, pthread_self()));
    assert_int_equal(members_with_holds(&a, 1), NSERVERS);
    for (int i = 0; i < NSERVERS; i++)
        ASSERT_BETWEEN(pttl_of(a.f[i], names[i]), 1, 20000); /* the caller's lease */
    ASSERT_RC(dlock_lock_acquire_async(a.m, OWNER, 0, DLOCK_WATCHDOG, record_done, &again),
              DLOCK_OK);
    ASSERT_RC(wait_done(&a, &again), DLOCK_OK); /* reentrant */
    assert_int_equal(members_with_holds(&a, 2), NSERVERS);
    int64_t holds = 0;
    ASSERT_RC(dlock_lock_hold_count(a.m, &holds), DLOCK_OK); /* the test thread holds none */
    assert_int_equal(holds, 0);
    ASSERT_RC(dlock_lock_try_acquire(a.m, 0, 1000), DLOCK_EDEADLK);
    bool flag = false;
    ASSERT_RC(dlock_lock_is_held(a.m, &flag), DLOCK_EDEADLK);

    ASSERT_RC(dlock_lock_release_async(a.m, OWNER, record_done, &rel1), DLOCK_OK);
    ASSERT_RC(wait_done(&a, &rel1), DLOCK_OK);
    assert_int_equal(members_with_holds(&a, 1), NSERVERS);
    ASSERT_RC(dlock_lock_release_async(a.m, OWNER, record_done, &rel2), DLOCK_OK);
    ASSERT_RC(wait_done(&a, &rel2), DLOCK_OK);
    for (int i = 0; i < NSERVERS; i++)
        assert_int_equal(redis_fixture_int(a.f[i], "EXISTS %s", names[i]), 0);
    run_loop_for(a.loop, 50);
    assert_int_equal(atomic_load(&acq.calls) + atomic_load(&again.calls), 2);
    assert_int_equal(atomic_load(&rel1.calls) + atomic_load(&rel2.calls), 2);
    close_multi(&a);
}

static void test_the_callback_runs_on_the_loop_thread_of_the_first_members_client(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    const bool own[NSERVERS] = {false, true, false};
    loop_multi a;
    open_multi(&a, own);
    /* locks[0] is on the test's loop: callbacks on the test thread */
    done acq = {0}, rel = {0};
    ASSERT_RC(dlock_lock_acquire_async(a.m, OWNER, 0, 20000, record_done, &acq), DLOCK_OK);
    ASSERT_RC(wait_done(&a, &acq), DLOCK_OK);
    assert_true(pthread_equal(acq.thread, pthread_self()));
    ASSERT_RC(dlock_lock_release_async(a.m, OWNER, record_done, &rel), DLOCK_OK);
    ASSERT_RC(wait_done(&a, &rel), DLOCK_OK);
    dlock_lock_free(a.m);
    /* member 1 first: its client's I/O thread */
    done probe = {0};
    ASSERT_RC(dlock_client_ping_async(a.c[1], record_ping, &probe), DLOCK_OK);
    ASSERT_RC(wait_done(&a, &probe), DLOCK_OK);
    assert_false(pthread_equal(probe.thread, pthread_self()));
    dlock_lock *order[NSERVERS] = {a.member[1], a.member[0], a.member[2]};
    ASSERT_RC(dlock_multilock_new(order, NSERVERS, &a.m), DLOCK_OK);
    done acq2 = {0}, rel2 = {0};
    ASSERT_RC(dlock_lock_acquire_async(a.m, OWNER, 0, 20000, record_done, &acq2), DLOCK_OK);
    ASSERT_RC(wait_done(&a, &acq2), DLOCK_OK);
    assert_true(pthread_equal(acq2.thread, probe.thread));
    assert_int_equal(members_with_holds(&a, 1), NSERVERS);
    ASSERT_RC(dlock_lock_release_async(a.m, OWNER, record_done, &rel2), DLOCK_OK);
    ASSERT_RC(wait_done(&a, &rel2), DLOCK_OK);
    assert_true(pthread_equal(rel2.thread, probe.thread));
    assert_int_equal(members_with_holds(&a, 0), NSERVERS);
    close_multi(&a);
}

static void test_async_try_with_a_member_held_elsewhere_gives_back_the_others_first(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    loop_multi a;
    open_multi(&a, NULL);
    /* each member in turn is the busy one: first, middle and last in the order */
    for (int busy = 0; busy < NSERVERS; busy++) {
        dlock_client *other = connect_client(a.f[busy]);
        dlock_lock *holder = NULL;
        ASSERT_RC(dlock_lock_new(other, names[busy], &holder), DLOCK_OK);
        ASSERT_RC(dlock_lock_acquire(holder, 30000), DLOCK_OK);
        done acq = {0};
        ASSERT_RC(dlock_lock_acquire_async(a.m, OWNER, 0, 20000, record_done, &acq), DLOCK_OK);
        ASSERT_RC(wait_done(&a, &acq), DLOCK_ETIMEDOUT);
        assert_non_null(strstr(dlock_last_error(), names[busy]));
        /* the members taken before the busy one were given back before the callback */
        assert_int_equal(members_with_holds(&a, 0), NSERVERS);
        run_loop_for(a.loop, 50);
        assert_int_equal(atomic_load(&acq.calls), 1);
        ASSERT_RC(dlock_lock_release(holder), DLOCK_OK);
        dlock_lock_free(holder);
        ASSERT_RC(dlock_client_free(other), DLOCK_OK);
    }
    close_multi(&a);
}

static void
test_freeing_it_while_an_acquire_waits_ends_it_once_canceled_and_gives_back_every_member(
    void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    loop_multi a;
    open_multi(&a, NULL);
    /* the last member in the order ("mla:c") is busy: the two others are taken first */
    dlock_client *other = connect_client(a.f[2]);
    dlock_lock *holder = NULL;
    ASSERT_RC(dlock_lock_new(other, names[2], &holder), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(holder, 30000), DLOCK_OK);
    done acq = {0};
    ASSERT_RC(dlock_lock_acquire_async(a.m, OWNER, DLOCK_FOREVER, 20000, record_done, &acq),
              DLOCK_OK);
    bool ok = false;
    /* waiting for the busy member: subscribed to its channel, the two others held */
    RUN_LOOP_UNTIL(a.loop, ok, numsub(a.f[2], "redisson_lock__channel:{mla:c}") == 1,
                   test_slack_ms(5000));
    assert_true(ok);
    assert_true(holds_of(&a, 0) == 1 && holds_of(&a, 1) == 1);
    dlock_lock_free(a.m); /* on the loop thread: returns at once */
    a.m = NULL;
    ASSERT_RC(wait_done(&a, &acq), DLOCK_ECANCELED);
    RUN_LOOP_UNTIL(a.loop, ok, holds_of(&a, 0) == 0 && holds_of(&a, 1) == 0, test_slack_ms(5000));
    assert_true(ok);
    /* the busy member, granted once freed: its late yes gives itself back */
    long long scripts = script_calls(a.f[2]);
    ASSERT_RC(dlock_lock_release(holder), DLOCK_OK);
    /* three scripts: the holder's release, then our acquire and the release after it */
    RUN_LOOP_UNTIL(a.loop, ok,
                   script_calls(a.f[2]) >= scripts + 3 &&
                       redis_fixture_int(a.f[2], "EXISTS %s", names[2]) == 0,
                   test_slack_ms(5000));
    if (!ok)
        fail_msg("%s: %lld scripts since, exists %lld, our holds %lld", names[2],
                 script_calls(a.f[2]) - scripts, redis_fixture_int(a.f[2], "EXISTS %s", names[2]),
                 holds_of(&a, 2));
    assert_int_equal(atomic_load(&acq.calls), 1);
    dlock_lock_free(holder);
    ASSERT_RC(dlock_client_free(other), DLOCK_OK);
    close_multi(&a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_async_acquire_holds_every_member_and_release_frees_them),
        cmocka_unit_test(test_the_callback_runs_on_the_loop_thread_of_the_first_members_client),
        cmocka_unit_test(test_async_try_with_a_member_held_elsewhere_gives_back_the_others_first),
        cmocka_unit_test(
            test_freeing_it_while_an_acquire_waits_ends_it_once_canceled_and_gives_back_every_member),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
