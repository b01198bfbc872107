/* SPDX-License-Identifier: MIT */
/* test_semaphore_threads.c — the semaphore under contention: many threads of two clients
 * (two client ids) on one semaphore, checked by a small in-process checker. Runs under
 * ThreadSanitizer too (the file name has "threads").
 *
 * The checker: inside each critical section (between acquire and release) a worker counts
 * itself in and out of an "inside" counter (atomic) and records the highest value it saw,
 * bumps a shared counter with a separate load and store (a read-modify-write that loses
 * updates when two sections overlap; the halves are relaxed atomics only so that TSan,
 * which cannot see the happens-before that Redis provides between two clients, does not
 * report the very race a 1-permit semaphore prevents), and logs its enter and exit times in
 * a slot taken inside the section. Afterwards: never more inside than permits (and with
 * more than one permit, that many were reached), the log's intervals never stack deeper
 * than permits, with 1 permit the counter is exact, every worker finished, every permit is
 * back and nothing stays subscribed. */
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

#include "core_call.h"
#include "dlock.h"
#include "harness.h"
#include "redis_fixture.h"
#include "test_util.h"
#include "wake_count.h"

#define BUDGET_S 120
#define CLIENTS 2

/* ---- the checker ------------------------------------------------------------------------- */

typedef struct section {
    int64_t enter_us, exit_us;
    int worker;
} section;

typedef struct checker {
    atomic_int inside;
    atomic_int max_inside;
    atomic_long counter;
    atomic_long next_slot;
    first_error errors;
    section *log;
    long cap;
} checker;

typedef struct worker {
    checker *k;
    dlock_semaphore *s; /* the client's handle, shared by its threads */
    int id;
    long sections;
    int64_t hold_ms;
    long done;
} worker;

static void worker_error(worker *w, const char *what, int rc) {
    first_error_note(&w->k->errors, w->id, what, rc);
}

static void critical_section(worker *w, long i) {
    checker *k = w->k;
    int now_inside = atomic_fetch_add(&k->inside, 1) + 1;
    int seen = atomic_load(&k->max_inside);
    while (now_inside > seen && !atomic_compare_exchange_weak(&k->max_inside, &seen, now_inside)) {
    }
    int64_t enter = test_now_us();
    long v = atomic_load_explicit(&k->counter, memory_order_relaxed);
    if (i % 4 == 0)
        sched_yield(); /* widen the window a lost update needs */
    atomic_store_explicit(&k->counter, v + 1, memory_order_relaxed);
    test_sleep_ms(w->hold_ms);
    long slot = atomic_fetch_add(&k->next_slot, 1);
    int64_t exit_us = test_now_us();
    if (slot < k->cap)
        k->log[slot] = (section){.enter_us = enter, .exit_us = exit_us, .worker = w->id};
    atomic_fetch_sub(&k->inside, 1);
}

static void *worker_loop(void *arg) {
    worker *w = arg;
    for (long i = 0; i < w->sections; i++) {
        int rc = dlock_semaphore_acquire(w->s, 1);
        if (rc != DLOCK_OK) {
            worker_error(w, "acquire", rc);
            return NULL;
        }
        critical_section(w, i);
        if ((rc = dlock_semaphore_release(w->s, 1)) != DLOCK_OK) {
            worker_error(w, "release", rc);
            return NULL;
        }
        w->done++;
    }
    return NULL;
}

typedef struct edge {
    int64_t at_us;
    int delta; /* +1 enter, -1 exit */
} edge;

static int by_time_exits_first(const void *a, const void *b) {
    const edge *x = a, *y = b;
    if (x->at_us != y->at_us)
        return (x->at_us > y->at_us) - (x->at_us < y->at_us);
    return x->delta - y->delta;
}

/* The deepest the logged sections stack up at any instant. */
static int deepest_overlap(const section *log, long n) {
    edge *e = calloc((size_t)(2 * n), sizeof(edge));
    assert_non_null(e);
    for (long i = 0; i < n; i++) {
        e[2 * i] = (edge){.at_us = log[i].enter_us, .delta = +1};
        e[2 * i + 1] = (edge){.at_us = log[i].exit_us, .delta = -1};
    }
    qsort(e, (size_t)(2 * n), sizeof(edge), by_time_exits_first);
    int depth = 0, deepest = 0;
    for (long i = 0; i < 2 * n; i++) {
        depth += e[i].delta;
        if (depth > deepest)
            deepest = depth;
    }
    free(e);
    return deepest;
}

typedef struct run_result {
    long sections;
    int64_t took_ms;
    int max_inside;
    int deepest;
} run_result;

/* threads_per_client threads on each of CLIENTS clients take and give back 1 permit of a
 * semaphore of `permits`, `sections` times each, holding it hold_ms; then the checks. */
static run_result run_contended(redis_fixture *f, const char *name, int64_t permits,
                                int threads_per_client, long sections, int64_t hold_ms) {
    dlock_client *c[CLIENTS];
    dlock_semaphore *s[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) {
        c[i] = connect_client(f);
        s[i] = NULL;
        ASSERT_RC(dlock_semaphore_new(c[i], name, &s[i]), DLOCK_OK);
    }
    bool was_set = false;
    ASSERT_RC(dlock_semaphore_try_set_permits(s[0], permits, &was_set), DLOCK_OK);
    assert_true(was_set);

    int n = CLIENTS * threads_per_client;
    long total = n * sections;
    checker *k = calloc(1, sizeof(*k));
    assert_non_null(k);
    k->cap = total;
    k->log = calloc((size_t)total, sizeof(section));
    worker *w = calloc((size_t)n, sizeof(worker));
    pthread_t *t = calloc((size_t)n, sizeof(pthread_t));
    int64_t start = test_now_ms();
    for (int i = 0; i < n; i++) {
        w[i] = (worker){
            .k = k, .s = s[i % CLIENTS], .id = i, .sections = sections, .hold_ms = hold_ms};
        assert_int_equal(pthread_create(&t[i], NULL, worker_loop, &w[i]), 0);
    }
    for (int i = 0; i < n; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    run_result res = {.sections = total, .took_ms = test_now_ms() - start};

    if (atomic_load(&k->errors.count))
        fail_msg("%ld errors, first: %s", atomic_load(&k->errors.count), k->errors.text);
    for (int i = 0; i < n; i++)
        if (w[i].done != sections)
            fail_msg("worker %d finished %ld of %ld sections", i, w[i].done, sections);
    assert_int_equal(atomic_load(&k->next_slot), total);
    res.max_inside = atomic_load(&k->max_inside);
    res.deepest = deepest_overlap(k->log, total);
    if (res.max_inside > permits)
        fail_msg("%d workers were inside at once with %lld permits", res.max_inside,
                 (long long)permits);
    if (res.deepest > permits)
        fail_msg("the log has %d sections stacked at one instant with %lld permits", res.deepest,
                 (long long)permits);
    if (permits == 1 && atomic_load(&k->counter) != total)
        fail_msg("counter %ld after %ld sections: updates were lost", atomic_load(&k->counter),
                 total);
    assert_int_equal(redis_fixture_int(f, "GET %s", name), permits); /* every permit is back */

    bool none = false;
    for (int64_t until = test_now_ms() + test_slack_ms(1000);
         !(none = subscribed_channels(f) == 0) && test_now_ms() < until;)
        test_sleep_ms(5);
    if (!none)
        fail_msg("%lld channel(s) still subscribed after the run", subscribed_channels(f));

    free(t);
    free(w);
    free(k->log);
    free(k);
    for (int i = 0; i < CLIENTS; i++) {
        dlock_semaphore_free(s[i]);
        dlock_client_free(c[i]);
    }
    return res;
}

/* ---- tests ------------------------------------------------------------------------------- */

static void
test_one_permit_lets_one_of_2_clients_x_6_threads_in_at_a_time_and_counts_exactly(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = NULL;
    assert_int_equal(redis_fixture_start(NULL, &f), 0);
    run_result r = run_contended(f, "mutex", 1, 6, test_scaled(400), 0);
    assert_int_equal(r.max_inside, 1);
    printf("# 1 permit, %d clients x 6 threads: %ld sections in %lld ms, %.0f sections/s\n",
           CLIENTS, r.sections, (long long)r.took_ms,
           (double)r.sections * 1000.0 / (double)(r.took_ms ? r.took_ms : 1));
    redis_fixture_stop(f);
}

static void test_three_permits_let_at_most_3_threads_in_together_and_3_get_in(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = NULL;
    assert_int_equal(redis_fixture_start(NULL, &f), 0);
    long sections = test_scaled(40);
    if (sections < 4)
        sections = 4;
    run_result r = run_contended(f, "three", 3, 6, sections, test_slack_ms(2));
    assert_int_equal(r.max_inside, 3); /* bounded, and the bound was reached */
    printf("# 3 permits, %d clients x 6 threads: %ld sections in %lld ms, at most %d inside "
           "(log: %d)\n",
           CLIENTS, r.sections, (long long)r.took_ms, r.max_inside, r.deepest);
    redis_fixture_stop(f);
}

static int acquire_one(void *arg) {
    return dlock_semaphore_try_acquire(arg, 1, test_slack_ms(10000));
}

static void
test_release_of_6_permits_wakes_all_6_waiting_threads_of_a_client_by_its_message(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = NULL;
    assert_int_equal(redis_fixture_start(NULL, &f), 0);
    dlock_client *a = connect_client(f);
    dlock_client *b = connect_client(f);
    dlock_semaphore *sa = NULL, *sb = NULL;
    ASSERT_RC(dlock_semaphore_new(a, "six", &sa), DLOCK_OK);
    ASSERT_RC(dlock_semaphore_new(b, "six", &sb), DLOCK_OK);
    enum { N = 6 };
    blocking_call w[N];
    long long scripts_before = script_calls(f);
    int64_t began_us = test_now_us();
    for (int i = 0; i < N; i++)
        blocking_call_start(&w[i], acquire_one, sa);
    /* all asleep: subscribed, and every waiter's attempts answered "busy" */
    bool asleep = false;
    POLL_UNTIL(asleep,
               numsub(f, "redisson_sc:{six}") == 1 && script_calls(f) >= scripts_before + N + 1,
               test_slack_ms(3000));
    assert_true(asleep);
    uint64_t wakes_before = client_wakes(a);
    int64_t release_start_us = test_now_us();
    ASSERT_RC(dlock_semaphore_release(sb, N), DLOCK_OK);
    int64_t release_end_us = test_now_us();
    int64_t worst_us = 0, last_us = 0;
    for (int i = 0; i < N; i++) {
        ASSERT_RC(blocking_call_join(&w[i]), DLOCK_OK);
        assert_true(w[i].returned_us >= release_start_us);
        int64_t latency_us = w[i].returned_us - release_end_us;
        if (latency_us > worst_us)
            worst_us = latency_us;
        if (w[i].returned_us > last_us)
            last_us = w[i].returned_us;
    }
    ASSERT_BETWEEN(worst_us / 1000, 0, test_prompt_ms());
    /* the one message let all six in, none waited for its re-check (wake_count.h: the six
     * woken, or all back before a re-check could come) */
    assert_true(client_wakes(a) >= wakes_before + N || last_us - began_us < TEST_RECHECK_MS * 1000);
    assert_int_equal(redis_fixture_int(f, "GET six"), 0);
    printf("# release of %d -> the last of %d waiting threads returned %.2f ms later\n", N, N,
           (double)worst_us / 1000.0);
    dlock_semaphore_free(sa);
    dlock_semaphore_free(sb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_one_permit_lets_one_of_2_clients_x_6_threads_in_at_a_time_and_counts_exactly),
        cmocka_unit_test(test_three_permits_let_at_most_3_threads_in_together_and_3_get_in),
        cmocka_unit_test(
            test_release_of_6_permits_wakes_all_6_waiting_threads_of_a_client_by_its_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
