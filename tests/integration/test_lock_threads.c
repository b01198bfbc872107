/* SPDX-License-Identifier: MIT */
/* test_lock_threads.c — mutual exclusion of the reentrant and fenced lock under contention:
 * many threads of two clients (two client ids) on one lock, checked by a small in-process
 * checker. Runs under ThreadSanitizer too (the file name has "threads").
 *
 * The checker: inside each critical section a worker flips an "inside" flag (an
 * atomic exchange that must find it clear), bumps a shared counter with a separate load and
 * store (a read-modify-write that loses updates when two sections overlap; the two halves
 * are relaxed atomics only so that TSan, which cannot see the happens-before that Redis
 * provides between two clients, does not report the very race the lock prevents), and
 * records its enter and exit times and, for a fenced lock, its token in a log slot taken
 * inside the section. Afterwards: no overlap was seen, the counter is exact, every worker
 * finished, the log's intervals are disjoint, and tokens rise in section order. */
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
#define CLIENTS 2

/* ---- the checker ------------------------------------------------------------------------- */

typedef struct section {
    int64_t enter_us, exit_us;
    uint64_t token;
    int worker;
} section;

typedef struct checker {
    atomic_int inside;
    atomic_long counter;
    atomic_long overlaps;
    atomic_long next_slot;
    first_error errors;
    section *log;
    long cap;
} checker;

typedef struct worker {
    checker *k;
    dlock_lock *l; /* the client's handle, shared by its threads */
    int id;
    long sections;
    long done;
    bool fenced;
    bool reentrant; /* take a second hold inside every other section */
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
    if (i % 4 == 0)
        sched_yield(); /* widen the window a lost update needs */
    atomic_store_explicit(&k->counter, v + 1, memory_order_relaxed);
    uint64_t token = 0;
    if (w->fenced) {
        int rc = dlock_lock_token(w->l, &token);
        if (rc != DLOCK_OK)
            worker_error(w, "token", rc);
    }
    long slot = atomic_fetch_add(&k->next_slot, 1);
    int64_t exit_us = test_now_us();
    if (slot < k->cap)
        k->log[slot] =
            (section){.enter_us = enter, .exit_us = exit_us, .token = token, .worker = w->id};
    atomic_store(&k->inside, 0);
}

static void *worker_loop(void *arg) {
    worker *w = arg;
    /* half the workers hold by the watchdog, half by an explicit lease */
    int64_t lease = w->id % 2 ? 30000 : DLOCK_WATCHDOG;
    for (long i = 0; i < w->sections; i++) {
        int rc = dlock_lock_acquire(w->l, lease);
        if (rc != DLOCK_OK) {
            worker_error(w, "acquire", rc);
            return NULL;
        }
        bool second = w->reentrant && i % 2 == 1;
        if (second && (rc = dlock_lock_acquire(w->l, lease)) != DLOCK_OK)
            worker_error(w, "reentrant acquire", rc);
        critical_section(w, i);
        if (second && (rc = dlock_lock_release(w->l)) != DLOCK_OK)
            worker_error(w, "reentrant release", rc);
        if ((rc = dlock_lock_release(w->l)) != DLOCK_OK) {
            worker_error(w, "release", rc);
            return NULL;
        }
        w->done++;
    }
    return NULL;
}

static int by_enter(const void *a, const void *b) {
    const section *x = a, *y = b;
    return (x->enter_us > y->enter_us) - (x->enter_us < y->enter_us);
}

typedef struct run_result {
    long sections;
    int64_t took_ms;
} run_result;

typedef struct pair {
    dlock_client *c[CLIENTS];
    dlock_lock *l[CLIENTS]; /* one handle per client, on the same name */
} pair;

static void pair_open(pair *p, redis_fixture *f, const char *name, bool fenced) {
    for (int i = 0; i < CLIENTS; i++) {
        p->c[i] = connect_client(f);
        p->l[i] = NULL;
        ASSERT_RC(fenced ? dlock_fencedlock_new(p->c[i], name, &p->l[i])
                         : dlock_lock_new(p->c[i], name, &p->l[i]),
                  DLOCK_OK);
    }
}

static void pair_close(pair *p) {
    for (int i = 0; i < CLIENTS; i++) {
        dlock_lock_free(p->l[i]);
        dlock_client_free(p->c[i]);
    }
}

/* threads_per_client threads on each client of p, sections each, then the checks. */
static run_result run_contended(redis_fixture *f, pair *p, int threads_per_client, long sections,
                                bool fenced) {
    int n = CLIENTS * threads_per_client;
    long total = n * sections;
    checker *k = calloc(1, sizeof(*k));
    k->cap = total;
    k->log = calloc((size_t)total, sizeof(section));
    worker *w = calloc((size_t)n, sizeof(worker));
    pthread_t *t = calloc((size_t)n, sizeof(pthread_t));
    int64_t start = test_now_ms();
    for (int i = 0; i < n; i++) {
        w[i] = (worker){.k = k,
                        .l = p->l[i % CLIENTS],
                        .id = i,
                        .sections = sections,
                        .fenced = fenced,
                        .reentrant = true};
        assert_int_equal(pthread_create(&t[i], NULL, worker_loop, &w[i]), 0);
    }
    for (int i = 0; i < n; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    run_result res = {.sections = total, .took_ms = test_now_ms() - start};

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
    if (fenced) {
        /* log slots are taken inside the sections: slot order is section order */
        for (long i = 1; i < total; i++)
            if (k->log[i].token <= k->log[i - 1].token)
                fail_msg("section %ld has token %llu after %llu", i,
                         (unsigned long long)k->log[i].token,
                         (unsigned long long)k->log[i - 1].token);
    }
    qsort(k->log, (size_t)total, sizeof(section), by_enter);
    for (long i = 1; i < total; i++)
        if (k->log[i].enter_us < k->log[i - 1].exit_us)
            fail_msg("sections of workers %d and %d overlap", k->log[i - 1].worker,
                     k->log[i].worker);
    assert_int_equal(redis_fixture_int(f, "EXISTS %s", dlock_lock_name(p->l[0])), 0);

    free(t);
    free(w);
    free(k->log);
    free(k);
    return res;
}

static void
test_two_clients_eight_threads_each_300_sections_never_overlap_and_count_exactly(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = NULL;
    assert_int_equal(redis_fixture_start(NULL, &f), 0);
    pair p;
    pair_open(&p, f, "contended", false);
    run_result r = run_contended(f, &p, 8, test_scaled(300), false);
    pair_close(&p);
    printf("# %d clients x 8 threads: %ld sections in %lld ms, %.0f sections/s\n", CLIENTS,
           r.sections, (long long)r.took_ms,
           (double)r.sections * 1000.0 / (double)(r.took_ms ? r.took_ms : 1));
    redis_fixture_stop(f);
}

static void
test_two_clients_eight_threads_on_a_fenced_lock_see_tokens_rise_in_section_order(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = NULL;
    assert_int_equal(redis_fixture_start(NULL, &f), 0);
    pair p;
    pair_open(&p, f, "fenced-contended", true);
    run_result r = run_contended(f, &p, 8, test_scaled(100), true);
    pair_close(&p);
    /* every acquisition took a token, the reentrant ones too (every other section) */
    long per_thread = test_scaled(100);
    long long tokens = (long long)CLIENTS * 8 * (per_thread + per_thread / 2);
    assert_int_equal(redis_fixture_int(f, "GET redisson_lock_token:{fenced-contended}"), tokens);
    printf("# fenced: %ld sections in %lld ms, %lld tokens\n", r.sections, (long long)r.took_ms,
           tokens);
    redis_fixture_stop(f);
}

static void test_no_subscription_is_left_when_nobody_waits_after_a_contended_run(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = NULL;
    assert_int_equal(redis_fixture_start(NULL, &f), 0);
    pair p;
    pair_open(&p, f, "left-behind", false);
    long long subscribes = redis_fixture_info_int(f, "commandstats", "cmdstat_subscribe.calls");
    run_contended(f, &p, 4, test_scaled(50), false);
    /* then a waiter that gives up (timed out) while the lock is held */
    ASSERT_RC(dlock_lock_acquire(p.l[0], 30000), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(p.l[1], 200, 30000), DLOCK_ETIMEDOUT);
    ASSERT_RC(dlock_lock_release(p.l[0]), DLOCK_OK);
    /* the run did wait: it subscribed */
    assert_true(redis_fixture_info_int(f, "commandstats", "cmdstat_subscribe.calls") > subscribes);
    bool none = false;
    int64_t until = test_now_ms() + slack_ms(1000);
    while (!(none = subscribed_channels(f) == 0) && test_now_ms() < until)
        test_sleep_ms(5);
    if (!none) {
        redisReply *ch = redis_fixture_cmd(f, "PUBSUB CHANNELS");
        fail_msg("%zu channel(s) still subscribed, first: %s", ch->elements,
                 ch->elements ? ch->element[0]->str : "");
    }
    pair_close(&p); /* the clients were up all along */
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_two_clients_eight_threads_each_300_sections_never_overlap_and_count_exactly),
        cmocka_unit_test(
            test_two_clients_eight_threads_on_a_fenced_lock_see_tokens_rise_in_section_order),
        cmocka_unit_test(test_no_subscription_is_left_when_nobody_waits_after_a_contended_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
