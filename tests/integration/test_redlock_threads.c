/* SPDX-License-Identifier: MIT */
/* test_redlock_threads.c — the composites of src/multilock under threads: mutual exclusion
 * of a RedLock over five real redis-servers between threads of two applications (two sets
 * of five clients), several threads sharing one RedLock handle (each thread an owner of
 * its own); and two threads taking overlapping MultiLocks given in opposite orders. Runs
 * under ThreadSanitizer too (the file name has "threads"): the composites keep per-owner
 * bookkeeping that the members' loop threads update, and a RedLock round is answered on
 * five loop threads at once.
 *
 * The checker: inside each critical section a worker flips an "inside" flag (an atomic
 * exchange that must find it clear) and bumps a shared counter with a separate load and
 * store (relaxed atomics, so that TSan does not report the race the lock prevents, whose
 * happens-before goes through Redis), and logs its enter and exit times. Afterwards: no
 * overlap, the counter exact, every worker finished, the logged intervals disjoint, and no
 * member left in Redis. */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dlock.h"
#include "harness.h"
#include "redis_fixture.h"
#include "test_util.h"

#define BUDGET_S 120
#define N 5
#define APPS 2
#define NAME "rl-threads"
#define WATCHDOG_MS 3000

/* ---- the checker ------------------------------------------------------------------------- */

typedef struct section {
    int64_t enter_us, exit_us;
    int worker;
} section;

typedef struct checker {
    atomic_int inside;
    atomic_long counter;
    atomic_long overlaps;
    atomic_long next_slot;
    first_error errors;
    atomic_int ready; /* workers started */
    int workers;
    section *log;
    long cap;
} checker;

typedef struct worker {
    checker *k;
    dlock_lock *l; /* the composite, shared by the threads of its application */
    int id;
    long sections;
    long done;
} worker;

static void worker_error(worker *w, const char *what, int rc) {
    first_error_note(&w->k->errors, w->id, what, rc);
}

static void critical_section(worker *w, long i) {
    checker *k = w->k;
    if (atomic_exchange(&k->inside, 1) != 0)
        atomic_fetch_add(&k->overlaps, 1);
    int64_t enter = test_now_us();
    long v = atomic_load_explicit(&k->counter, memory_order_relaxed);
    if (i % 2 == 0)
        sched_yield(); /* widen the window a lost update needs */
    else if (w->l)
        test_sleep_ms(1); /* and keep the others waiting a while */
    atomic_store_explicit(&k->counter, v + 1, memory_order_relaxed);
    long slot = atomic_fetch_add(&k->next_slot, 1);
    int64_t exit_us = test_now_us();
    if (slot < k->cap)
        k->log[slot] = (section){.enter_us = enter, .exit_us = exit_us, .worker = w->id};
    atomic_store(&k->inside, 0);
}

static void *worker_loop(void *arg) {
    worker *w = arg;
    /* everybody starts together, or the first thread is done before the last one begins */
    atomic_fetch_add(&w->k->ready, 1);
    while (atomic_load(&w->k->ready) < w->k->workers)
        sched_yield();
    /* half the workers hold by the watchdog, half by an explicit lease */
    int64_t lease = w->id % 2 ? 20000 : DLOCK_WATCHDOG;
    for (long i = 0; i < w->sections; i++) {
        int rc = dlock_lock_try_acquire(w->l, 60000, lease);
        if (rc != DLOCK_OK) {
            worker_error(w, "acquire", rc);
            return NULL;
        }
        critical_section(w, i);
        if ((rc = dlock_lock_release(w->l)) != DLOCK_OK) {
            worker_error(w, "release", rc);
            return NULL;
        }
        w->done++;
        test_sleep_ms(1 + (w->id + i) % 3); /* let the others in */
    }
    return NULL;
}

static int by_enter(const void *a, const void *b) {
    const section *x = a, *y = b;
    return (x->enter_us > y->enter_us) - (x->enter_us < y->enter_us);
}

/* Runs the workers (workers[i].l set by the caller) and checks the log. */
static int64_t run_checked(worker *w, int n, long sections) {
    long total = n * sections;
    checker *k = calloc(1, sizeof(*k));
    assert_non_null(k);
    k->cap = total;
    k->workers = n;
    k->log = calloc((size_t)total, sizeof(section));
    pthread_t *t = calloc((size_t)n, sizeof(pthread_t));
    assert_non_null(k->log);
    assert_non_null(t);
    int64_t start = test_now_ms();
    for (int i = 0; i < n; i++) {
        w[i].k = k;
        w[i].id = i;
        w[i].sections = sections;
        w[i].done = 0;
        assert_int_equal(pthread_create(&t[i], NULL, worker_loop, &w[i]), 0);
    }
    for (int i = 0; i < n; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    int64_t took = test_now_ms() - start;
    if (atomic_load(&k->errors.count))
        fail_msg("%ld errors, first: %s", atomic_load(&k->errors.count), k->errors.text);
    if (atomic_load(&k->overlaps))
        fail_msg("%ld sections found another inside", atomic_load(&k->overlaps));
    for (int i = 0; i < n; i++)
        if (w[i].done != sections)
            fail_msg("worker %d finished %ld of %ld sections", i, w[i].done, sections);
    if (atomic_load(&k->counter) != total)
        fail_msg("counter %ld after %ld sections: updates were lost", atomic_load(&k->counter),
                 total);
    assert_int_equal(atomic_load(&k->next_slot), total);
    qsort(k->log, (size_t)total, sizeof(section), by_enter);
    for (long i = 1; i < total; i++)
        if (k->log[i].enter_us < k->log[i - 1].exit_us)
            fail_msg("sections of workers %d and %d overlap", k->log[i - 1].worker,
                     k->log[i].worker);
    free(t);
    free(k->log);
    free(k);
    return took;
}

/* ---- RedLock: two applications, threads sharing each one's handle ------------------------ */

static void test_two_applications_three_threads_each_on_one_redlock_never_overlap_and_count_exactly(
    void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f[N];
    masters_start(f, N);
    masters_app apps[APPS];
    for (int i = 0; i < APPS; i++)
        masters_app_open(&apps[i], f, N, NAME, &(test_client_cfg){.watchdog_ms = WATCHDOG_MS},
                         false);
    const int threads = 3 * APPS;
    long sections = test_scaled(10);
    worker w[3 * APPS];
    memset(w, 0, sizeof(w));
    for (int i = 0; i < threads; i++)
        w[i].l = apps[i % APPS].rl;
    int64_t took = run_checked(w, threads, sections);
    for (int i = 0; i < N; i++)
        assert_int_equal(redis_fixture_int(f[i], "EXISTS " NAME), 0);
    printf("# RedLock, %d applications x 3 threads: %ld sections in %lld ms\n", APPS,
           threads * sections, (long long)took);
    for (int i = 0; i < APPS; i++)
        masters_app_close(&apps[i]);
    masters_stop(f, N);
}

/* ---- MultiLock: overlapping sets in opposite orders -------------------------------------- */

/* Thread 0 takes {a, b, c} given in that order, thread 1 {c, b, a} in the reverse order;
 * each has its own member handles on the three shared clients. */
typedef struct overlap_worker {
    dlock_client **c;
    int index;
    long rounds;
    checker *k;
    long done;
    int rc;
    char detail[256];
} overlap_worker;

static void *overlap_loop(void *arg) {
    overlap_worker *w = arg;
    static const char *const names[3] = {"ov:a", "ov:b", "ov:c"};
    dlock_lock *members[3] = {0};
    dlock_lock *m = NULL;
    int rc = DLOCK_OK;
    for (int i = 0; i < 3 && rc == DLOCK_OK; i++) {
        int j = w->index == 0 ? i : 2 - i;
        rc = dlock_lock_new(w->c[j], names[j], &members[i]);
    }
    if (rc == DLOCK_OK)
        rc = dlock_multilock_new(members, 3, &m);
    worker as_worker = {.k = w->k, .id = w->index};
    for (long i = 0; rc == DLOCK_OK && i < w->rounds; i++) {
        rc = dlock_lock_try_acquire(m, 30000, i % 2 ? 20000 : DLOCK_WATCHDOG);
        if (rc != DLOCK_OK)
            break;
        critical_section(&as_worker, i);
        rc = dlock_lock_release(m);
        if (rc == DLOCK_OK)
            w->done++;
    }
    if (rc != DLOCK_OK)
        snprintf(w->detail, sizeof(w->detail), "%s", dlock_last_error());
    w->rc = rc;
    dlock_lock_free(m);
    for (int i = 0; i < 3; i++)
        dlock_lock_free(members[i]);
    return NULL;
}

static void
test_two_threads_taking_overlapping_multilocks_in_opposite_orders_never_deadlock(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f[3];
    dlock_client *c[3];
    masters_start(f, 3);
    for (int i = 0; i < 3; i++)
        c[i] = connect_client_cfg(f[i], (test_client_cfg){.watchdog_ms = WATCHDOG_MS});
    checker k = {0};
    long rounds = test_scaled(200);
    overlap_worker w[2] = {{.c = c, .index = 0, .rounds = rounds, .k = &k},
                           {.c = c, .index = 1, .rounds = rounds, .k = &k}};
    k.cap = 0; /* no log: the flag and the counter */
    pthread_t t[2];
    int64_t start = test_now_ms();
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, overlap_loop, &w[i]), 0);
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    int64_t took = test_now_ms() - start;
    for (int i = 0; i < 2; i++)
        if (w[i].rc != DLOCK_OK)
            fail_msg("thread %d: %s (%s) after %ld rounds", i, dlock_err_name(w[i].rc), w[i].detail,
                     w[i].done);
    assert_int_equal(atomic_load(&k.overlaps), 0);
    assert_int_equal(atomic_load(&k.counter), 2 * rounds);
    assert_int_equal(redis_fixture_int(f[0], "EXISTS ov:a") +
                         redis_fixture_int(f[1], "EXISTS ov:b") +
                         redis_fixture_int(f[2], "EXISTS ov:c"),
                     0);
    printf("# MultiLock, 2 threads x %ld rounds in opposite orders: %lld ms\n", rounds,
           (long long)took);
    for (int i = 0; i < 3; i++)
        ASSERT_RC(dlock_client_free(c[i]), DLOCK_OK);
    for (int i = 0; i < 3; i++)
        redis_fixture_stop(f[i]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_two_applications_three_threads_each_on_one_redlock_never_overlap_and_count_exactly),
        cmocka_unit_test(
            test_two_threads_taking_overlapping_multilocks_in_opposite_orders_never_deadlock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
