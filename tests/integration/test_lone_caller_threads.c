/* SPDX-License-Identifier: MIT */
/* test_lone_caller_threads.c — a blocking call alone on its client reads its own reply on
 * its own thread (the socket is lent to it: src/core/loop.h, "the lone caller"), and that
 * changes nothing a caller can see:
 *   - the I/O thread is not woken for each reply (counted by its context switches, from
 *     /proc: not a time);
 *   - an idle client whose socket was lent still notices a connection the server closed,
 *     and reconnects without a call;
 *   - a lease that a lone release finds lost is told to the lost callback on the I/O
 *     thread, never on the caller's, and before the release returns;
 *   - threads that call now alone, now together, each get their own replies. */
#include <dirent.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "dlock.h"
#include "harness.h"
#include "io_thread_switches.h"
#include "redis_fixture.h"
#include "test_util.h"

/* ---- the tests ------------------------------------------------------------------------------- */

#define LONE_PAIRS 1000

static void test_a_lone_caller_does_not_wake_the_io_thread_for_its_replies(void **state) {
    (void)state;
    test_watchdog_arm(120, __func__);
    redis_fixture *f = start_server();
    long io[MAX_TASKS];
    int nio;
    dlock_client *c = client_and_its_threads(f, io, &nio);
    dlock_lock *l;
    assert_int_equal(dlock_lock_new(c, "lone", &l), DLOCK_OK);
    assert_int_equal(dlock_client_ping(c), DLOCK_OK);

    long before = switches_of(io, nio);
    int64_t start = test_now_ms();
    for (int i = 0; i < LONE_PAIRS; i++) {
        assert_int_equal(dlock_lock_acquire(l, 30000), DLOCK_OK);
        assert_int_equal(dlock_lock_release(l), DLOCK_OK);
    }
    int64_t took = test_now_ms() - start;
    long woken = switches_of(io, nio) - before;
    printf("# %d pairs (%d calls) in %lld ms: the I/O thread slept %ld times\n", LONE_PAIRS,
           2 * LONE_PAIRS, (long long)took, woken);
    /* Were the I/O thread reading the replies, it would sleep again after each: at least
     * one time per call. Lent, it wakes for its own timers only (the lending's idle check,
     * every 100 ms): 2,000 calls would have to take 100 s to come near the bound. */
    assert_true(woken < LONE_PAIRS);

    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_an_idle_client_notices_its_connection_closed_after_lone_calls(void **state) {
    (void)state;
    test_watchdog_arm(120, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    for (int i = 0; i < 10; i++) /* lone calls: the socket is lent, and stays lent a while */
        assert_int_equal(dlock_client_ping(c), DLOCK_OK);
    dlock_stats before;
    dlock_stats_init(&before);
    assert_int_equal(dlock_client_stats(c, &before), DLOCK_OK);

    assert_true(redis_fixture_client_kill_type(f, "normal") >= 1);
    /* no call from here on: only the I/O thread can see the close, once it watches the
     * socket again */
    dlock_stats now;
    dlock_stats_init(&now);
    int64_t deadline = test_now_ms() + test_prompt_ms();
    do {
        test_sleep_ms(10);
        assert_int_equal(dlock_client_stats(c, &now), DLOCK_OK);
    } while (now.reconnects == before.reconnects && test_now_ms() < deadline);
    printf("# reconnects %llu -> %llu without a call\n", (unsigned long long)before.reconnects,
           (unsigned long long)now.reconnects);
    assert_true(now.reconnects > before.reconnects);
    assert_int_equal(dlock_client_ping(c), DLOCK_OK);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

typedef struct lost_seen {
    atomic_int calls;
    atomic_bool on_caller_thread;
    pthread_t caller;
} lost_seen;

static void on_lost(dlock_lock *l, uint64_t owner, int reason, void *arg) {
    (void)l;
    (void)owner;
    (void)reason;
    lost_seen *seen = arg;
    if (pthread_equal(pthread_self(), seen->caller))
        atomic_store(&seen->on_caller_thread, true);
    atomic_fetch_add(&seen->calls, 1);
}

static void test_a_loss_a_lone_release_finds_is_told_on_the_io_thread(void **state) {
    (void)state;
    test_watchdog_arm(120, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l;
    assert_int_equal(dlock_lock_new(c, "short", &l), DLOCK_OK);
    lost_seen seen = {.caller = pthread_self()};
    atomic_init(&seen.calls, 0);
    atomic_init(&seen.on_caller_thread, false);
    assert_int_equal(dlock_lock_on_lost(l, on_lost, &seen), DLOCK_OK);

    assert_int_equal(dlock_lock_acquire(l, 200), DLOCK_OK);
    /* the lease runs out in Redis; the release, a lone call, finds it gone */
    int64_t deadline = test_now_ms() + test_prompt_ms();
    while (redis_fixture_int(f, "EXISTS short") != 0 && test_now_ms() < deadline)
        test_sleep_ms(20);
    assert_int_equal(redis_fixture_int(f, "EXISTS short"), 0);
    assert_int_equal(dlock_lock_release(l), DLOCK_ELOST);
    /* told before the release returned, as when the I/O thread reads the reply */
    assert_int_equal(atomic_load(&seen.calls), 1);
    assert_false(atomic_load(&seen.on_caller_thread));
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- now alone, now together ------------------------------------------------------------- */

#define MIXED_THREADS 4
#define MIXED_PAIRS 300

typedef struct mixed_worker {
    dlock_client *c;
    int index;
    int failures, mismatches;
} mixed_worker;

static void *mixed_main(void *arg) {
    mixed_worker *w = arg;
    char name[32];
    snprintf(name, sizeof(name), "mixed-%d", w->index);
    dlock_lock *l;
    if (dlock_fencedlock_new(w->c, name, &l) != DLOCK_OK) { /* a token: a call without I/O */
        w->failures++;
        return NULL;
    }
    for (int i = 0; i < MIXED_PAIRS; i++) {
        uint64_t token = 0;
        if (dlock_lock_acquire(l, 30000) != DLOCK_OK)
            w->failures++;
        else if (dlock_lock_token(l, &token) != DLOCK_OK)
            w->failures++;
        if (dlock_lock_release(l) != DLOCK_OK)
            w->failures++;
        bool held = true;
        if (dlock_lock_is_held(l, &held) != DLOCK_OK)
            w->failures++;
        else if (held)
            w->mismatches++;
        /* now and then a pause, so that the others' calls are now alone, now not */
        if ((i + w->index) % 7 == 0)
            test_sleep_ms(1 + (i % 3));
    }
    dlock_lock_free(l);
    return NULL;
}

static void test_threads_calling_now_alone_now_together_each_get_their_own_replies(void **state) {
    (void)state;
    test_watchdog_arm(180, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    mixed_worker w[MIXED_THREADS];
    pthread_t t[MIXED_THREADS];
    for (int i = 0; i < MIXED_THREADS; i++) {
        w[i] = (mixed_worker){.c = c, .index = i};
        assert_int_equal(pthread_create(&t[i], NULL, mixed_main, &w[i]), 0);
    }
    int failures = 0, mismatches = 0;
    for (int i = 0; i < MIXED_THREADS; i++) {
        pthread_join(t[i], NULL);
        failures += w[i].failures;
        mismatches += w[i].mismatches;
    }
    dlock_stats s;
    dlock_stats_init(&s);
    assert_int_equal(dlock_client_stats(c, &s), DLOCK_OK);
    printf("# %d threads x %d pairs: %d failed, %d held after release; in flight now %lld\n",
           MIXED_THREADS, MIXED_PAIRS, failures, mismatches, (long long)s.calls_in_flight);
    assert_int_equal(failures, 0);
    assert_int_equal(mismatches, 0);
    assert_int_equal(s.calls_in_flight, 0);
    for (int i = 0; i < MIXED_THREADS; i++) { /* every lock free in Redis */
        char key[32];
        snprintf(key, sizeof(key), "mixed-%d", i);
        assert_int_equal(redis_fixture_int(f, "EXISTS %s", key), 0);
    }
    dlock_client_free(c);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_lone_caller_does_not_wake_the_io_thread_for_its_replies),
        cmocka_unit_test(test_an_idle_client_notices_its_connection_closed_after_lone_calls),
        cmocka_unit_test(test_a_loss_a_lone_release_finds_is_told_on_the_io_thread),
        cmocka_unit_test(test_threads_calling_now_alone_now_together_each_get_their_own_replies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
