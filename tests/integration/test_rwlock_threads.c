/* SPDX-License-Identifier: MIT */
/* test_rwlock_threads.c — the read-write lock under contention: many threads of two clients
 * (two client ids) on one lock, checked by a small in-process checker; a writer that must
 * get in under a continuous stream of readers (dlock's writer priority); and 16 reader
 * threads of one client that hold the lock together. Runs under ThreadSanitizer too (the
 * file name has "threads").
 *
 * The checker: a reader entering its section adds itself to a count of readers inside and
 * then looks at the writer slot; a writer entering claims the writer slot (it must be free)
 * and then looks at the count of readers. Both are sequentially consistent atomics, so two
 * sections that overlap in time always see each other: a reader that finds a writer other
 * than its own owner inside, or a writer that finds a reader or another writer, is a
 * violation. Writers also bump a shared counter with a separate load and store (relaxed
 * atomics, so that TSan, which cannot see the happens-before Redis provides between two
 * clients, does not report the very race the lock prevents): a lost update shows as a count
 * below the number of write sections. A writer sometimes downgrades: it reads inside its
 * write section, releases the write hold and goes on reading. */
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

typedef struct checker {
    atomic_int readers_inside;
    atomic_int most_readers_inside;
    atomic_int writer_inside; /* worker id + 1 of the writer inside, 0: none */
    atomic_long write_counter;
    atomic_long read_sections, write_sections, downgrades;
    atomic_long violations;
    first_error errors;
    pthread_mutex_t mu; /* the first violation text */
    char violation[256];
} checker;

typedef struct worker {
    checker *k;
    dlock_rwlock *rw; /* the client's handle, shared by its threads */
    int id;
    long iterations;
    unsigned seed;
    long done;
} worker;

static void worker_error(worker *w, const char *what, int rc) {
    first_error_note(&w->k->errors, w->id, what, rc);
}

static void violation(worker *w, const char *what, long seen) {
    checker *k = w->k;
    if (atomic_fetch_add(&k->violations, 1) == 0) {
        pthread_mutex_lock(&k->mu);
        snprintf(k->violation, sizeof(k->violation), "worker %d: %s (saw %ld)", w->id, what, seen);
        pthread_mutex_unlock(&k->mu);
    }
}

static void reader_enter(worker *w) {
    checker *k = w->k;
    int inside = atomic_fetch_add(&k->readers_inside, 1) + 1;
    int most = atomic_load(&k->most_readers_inside);
    while (inside > most && !atomic_compare_exchange_weak(&k->most_readers_inside, &most, inside)) {
    }
    int writer = atomic_load(&k->writer_inside);
    if (writer != 0 && writer != w->id + 1)
        violation(w, "a reader entered while another owner wrote", writer - 1);
}

static void reader_exit(worker *w) {
    atomic_fetch_sub(&w->k->readers_inside, 1);
}

static void writer_enter(worker *w) {
    checker *k = w->k;
    int none = 0;
    if (!atomic_compare_exchange_strong(&k->writer_inside, &none, w->id + 1))
        violation(w, "a writer entered while another wrote", none - 1);
    int readers = atomic_load(&k->readers_inside);
    if (readers != 0)
        violation(w, "a writer entered while readers read", readers);
    long v = atomic_load_explicit(&k->write_counter, memory_order_relaxed);
    sched_yield(); /* widen the window a lost update needs */
    atomic_store_explicit(&k->write_counter, v + 1, memory_order_relaxed);
}

static void writer_exit(worker *w) {
    int me = w->id + 1;
    atomic_compare_exchange_strong(&w->k->writer_inside, &me, 0);
}

static const int64_t LEASE_MS = 30000;

static bool take(worker *w, dlock_lock *l, const char *what) {
    int rc = dlock_lock_try_acquire(l, slack_ms(30000), LEASE_MS);
    if (rc != DLOCK_OK)
        worker_error(w, what, rc);
    return rc == DLOCK_OK;
}

static void give(worker *w, dlock_lock *l, const char *what) {
    int rc = dlock_lock_release(l);
    if (rc != DLOCK_OK)
        worker_error(w, what, rc);
}

/* One read section: sometimes reentrant (a second read hold inside). */
static void read_section(worker *w, bool reentrant) {
    dlock_lock *r = dlock_rwlock_read(w->rw);
    if (!take(w, r, "read acquire"))
        return;
    reader_enter(w);
    if (reentrant && take(w, r, "reentrant read acquire")) {
        sched_yield();
        give(w, r, "reentrant read release");
    }
    sched_yield();
    reader_exit(w);
    atomic_fetch_add(&w->k->read_sections, 1);
    give(w, r, "read release");
}

/* One write section: sometimes reentrant, sometimes ending in a downgrade. */
static void write_section(worker *w, int flavour) {
    dlock_lock *wr = dlock_rwlock_write(w->rw), *r = dlock_rwlock_read(w->rw);
    if (!take(w, wr, "write acquire"))
        return;
    writer_enter(w);
    atomic_fetch_add(&w->k->write_sections, 1);
    if (flavour == 1 && take(w, wr, "reentrant write acquire"))
        give(w, wr, "reentrant write release");
    if (flavour == 2 && take(w, r, "downgrade read acquire")) {
        reader_enter(w);
        writer_exit(w);
        give(w, wr, "downgrade write release");
        atomic_fetch_add(&w->k->downgrades, 1);
        sched_yield(); /* now an ordinary reader: others may read too */
        reader_exit(w);
        give(w, r, "downgraded read release");
        return;
    }
    writer_exit(w);
    give(w, wr, "write release");
}

static void *worker_loop(void *arg) {
    worker *w = arg;
    for (long i = 0; i < w->iterations; i++) {
        unsigned roll = (unsigned)rand_r(&w->seed) % 100;
        if (roll < 60)
            read_section(w, false);
        else if (roll < 70)
            read_section(w, true);
        else if (roll < 85)
            write_section(w, 0);
        else if (roll < 92)
            write_section(w, 1);
        else
            write_section(w, 2);
        w->done++;
    }
    return NULL;
}

static void test_random_read_write_mix_of_2_clients_x_6_threads_has_no_violation_and_no_lost_update(
    void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = NULL;
    assert_int_equal(redis_fixture_start(NULL, &f), 0);
    enum { THREADS_PER_CLIENT = 6, WORKERS = CLIENTS * THREADS_PER_CLIENT };
    dlock_client *clients[CLIENTS];
    dlock_rwlock *rws[CLIENTS];
    for (int c = 0; c < CLIENTS; c++) {
        clients[c] = connect_client(f);
        ASSERT_RC(dlock_rwlock_new(clients[c], "mix", &rws[c]), DLOCK_OK);
    }
    static checker k;
    memset(&k, 0, sizeof(k));
    pthread_mutex_init(&k.mu, NULL);
    worker workers[WORKERS];
    pthread_t threads[WORKERS];
    const long iterations = test_scaled(400);
    const unsigned seed = (unsigned)test_now_us(); /* printed below: a failure can be replayed */
    int64_t start = test_now_ms();
    for (int i = 0; i < WORKERS; i++) {
        workers[i] = (worker){.k = &k,
                              .rw = rws[i % CLIENTS],
                              .id = i,
                              .iterations = iterations,
                              .seed = seed + (unsigned)i};
        assert_int_equal(pthread_create(&threads[i], NULL, worker_loop, &workers[i]), 0);
    }
    for (int i = 0; i < WORKERS; i++)
        assert_int_equal(pthread_join(threads[i], NULL), 0);
    int64_t took = test_now_ms() - start;
    if (atomic_load(&k.errors.count))
        fail_msg("%ld errors, first: %s (seed %u)", atomic_load(&k.errors.count), k.errors.text,
                 seed);
    if (atomic_load(&k.violations))
        fail_msg("%ld violations, first: %s (seed %u)", atomic_load(&k.violations), k.violation,
                 seed);
    for (int i = 0; i < WORKERS; i++)
        assert_int_equal(workers[i].done, iterations);
    long writes = atomic_load(&k.write_sections);
    assert_int_equal(atomic_load(&k.write_counter), writes);
    assert_int_equal(atomic_load(&k.read_sections) + writes, WORKERS * iterations);
    assert_true(writes > 0 && atomic_load(&k.read_sections) > 0);
    if (iterations >= 100) /* readers did share (a statistical certainty at full scale) */
        assert_true(atomic_load(&k.most_readers_inside) >= 2);
    assert_int_equal(redis_fixture_int(f, "EXISTS mix"), 0);
    assert_int_equal(redis_fixture_int(f, "EXISTS {mix}:rwlock_writers"), 0);
    printf("# %d workers x %ld: %ld reads, %ld writes (%ld downgrades), at most %d readers "
           "inside at once, 0 violations, %lld ms (seed %u)\n",
           WORKERS, iterations, atomic_load(&k.read_sections), writes, atomic_load(&k.downgrades),
           atomic_load(&k.most_readers_inside), (long long)took, seed);
    for (int c = 0; c < CLIENTS; c++) {
        dlock_rwlock_free(rws[c]);
        dlock_client_free(clients[c]);
    }
    pthread_mutex_destroy(&k.mu);
    redis_fixture_stop(f);
}

/* ---- a writer under a continuous stream of readers --------------------------------------- */

typedef struct stream_reader {
    dlock_rwlock *rw;
    atomic_int *stop;
    atomic_int *inside;
    unsigned seed;
    long sections;
    int error_rc;
} stream_reader;

/* Reads again and again, each section 5..25 ms, with no pause between: with several of
 * them the lock is never free of readers. */
static void *stream_reader_main(void *arg) {
    stream_reader *s = arg;
    dlock_lock *r = dlock_rwlock_read(s->rw);
    while (!atomic_load(s->stop)) {
        int rc = dlock_lock_try_acquire(r, slack_ms(30000), 30000);
        if (rc != DLOCK_OK) {
            s->error_rc = rc;
            return NULL;
        }
        atomic_fetch_add(s->inside, 1);
        test_sleep_ms(5 + (int64_t)(rand_r(&s->seed) % 21));
        atomic_fetch_sub(s->inside, 1);
        rc = dlock_lock_release(r);
        if (rc != DLOCK_OK) {
            s->error_rc = rc;
            return NULL;
        }
        s->sections++;
    }
    return NULL;
}

typedef struct free_sampler {
    redis_fixture *f;
    atomic_int *stop;
    long samples, free_seen;
} free_sampler;

/* Samples whether the lock exists every 2 ms until stopped. */
static void *sampler_main(void *arg) {
    free_sampler *s = arg;
    while (!atomic_load(s->stop)) {
        if (redis_fixture_int(s->f, "EXISTS stream") == 0)
            s->free_seen++;
        s->samples++;
        test_sleep_ms(2);
    }
    return NULL;
}

static void
test_writer_gets_in_under_a_continuous_stream_of_readers_within_fair_wait_plus_2_s(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = NULL;
    assert_int_equal(redis_fixture_start(NULL, &f), 0);
    const int64_t fair_wait_ms = 3000;
    enum { READERS = 6 };
    dlock_client *rc[CLIENTS],
        *wc = connect_client_cfg(f, (test_client_cfg){.fair_wait_ms = fair_wait_ms});
    dlock_rwlock *rrw[CLIENTS], *wrw = NULL;
    for (int c = 0; c < CLIENTS; c++) {
        rc[c] = connect_client_cfg(f, (test_client_cfg){.fair_wait_ms = fair_wait_ms});
        ASSERT_RC(dlock_rwlock_new(rc[c], "stream", &rrw[c]), DLOCK_OK);
    }
    ASSERT_RC(dlock_rwlock_new(wc, "stream", &wrw), DLOCK_OK);
    atomic_int stop = 0, stop_sampler = 0, inside = 0;
    stream_reader readers[READERS];
    pthread_t threads[READERS];
    for (int i = 0; i < READERS; i++) {
        readers[i] = (stream_reader){.rw = rrw[i % CLIENTS],
                                     .stop = &stop,
                                     .inside = &inside,
                                     .seed = 0xabc0u + (unsigned)i};
        assert_int_equal(pthread_create(&threads[i], NULL, stream_reader_main, &readers[i]), 0);
    }
    /* the stream runs: from now on the lock is never seen free until the writer gets in */
    for (int64_t until = test_now_ms() + slack_ms(5000);
         redis_fixture_int(f, "EXISTS stream") == 0 && test_now_ms() < until;)
        test_sleep_ms(1);
    test_sleep_ms(300);
    free_sampler sampler = {.f = f, .stop = &stop_sampler};
    pthread_t sampler_thread;
    assert_int_equal(pthread_create(&sampler_thread, NULL, sampler_main, &sampler), 0);
    test_sleep_ms(500);

    const int rounds = 5;
    int64_t worst_ms = 0, total_ms = 0;
    dlock_lock *w = dlock_rwlock_write(wrw);
    for (int round = 0; round < rounds; round++) {
        int64_t start = test_now_ms();
        int rc_w = dlock_lock_try_acquire(w, fair_wait_ms + slack_ms(2000), 30000);
        int64_t waited = test_now_ms() - start;
        if (round == 0) {
            atomic_store(&stop_sampler, 1);
            assert_int_equal(pthread_join(sampler_thread, NULL), 0);
        }
        ASSERT_RC(rc_w, DLOCK_OK);
        int readers_inside = atomic_load(&inside);
        test_sleep_ms(20);
        ASSERT_RC(dlock_lock_release(w), DLOCK_OK);
        assert_int_equal(readers_inside, 0);
        ASSERT_BETWEEN(waited, 0, fair_wait_ms + slack_ms(2000));
        if (waited > worst_ms)
            worst_ms = waited;
        total_ms += waited;
        test_sleep_ms(200); /* the stream resumes between rounds */
    }
    atomic_store(&stop, 1);
    long sections = 0;
    for (int i = 0; i < READERS; i++) {
        assert_int_equal(pthread_join(threads[i], NULL), 0);
        ASSERT_RC(readers[i].error_rc, DLOCK_OK);
        sections += readers[i].sections;
    }
    /* before the writer's first attempt the stream never let the lock go free */
    assert_true(sampler.samples >= 50);
    printf("# reader stream (%d readers, 2 clients): lock free in %ld of %ld samples before the "
           "writer; writer waited mean %.1f ms, worst %lld ms (%d rounds, fair_wait_ms %lld); "
           "%ld read sections\n",
           READERS, sampler.free_seen, sampler.samples, (double)total_ms / rounds,
           (long long)worst_ms, rounds, (long long)fair_wait_ms, sections);
#if !defined(__SANITIZE_THREAD__)
    /* the setup really was a continuous stream (ThreadSanitizer slows the readers too
     * much for that: there only the writer's bound above is checked) */
    assert_true(sampler.free_seen * 20 <= sampler.samples); /* at most 5 % of samples */
#endif
    assert_int_equal(redis_fixture_int(f, "EXISTS {stream}:rwlock_writers"), 0);
    for (int c = 0; c < CLIENTS; c++) {
        dlock_rwlock_free(rrw[c]);
        dlock_client_free(rc[c]);
    }
    dlock_rwlock_free(wrw);
    dlock_client_free(wc);
    redis_fixture_stop(f);
}

/* ---- readers of one client share ---------------------------------------------------------- */

typedef struct gathering_reader {
    dlock_lock *l;
    atomic_int *inside;
    atomic_int *most;
    int want;
    int rc;
} gathering_reader;

/* Holds its read until want readers are inside at once (or 5 s passed). */
static void *gathering_reader_main(void *arg) {
    gathering_reader *g = arg;
    g->rc = dlock_lock_try_acquire(g->l, slack_ms(10000), 30000);
    if (g->rc != DLOCK_OK)
        return NULL;
    int now = atomic_fetch_add(g->inside, 1) + 1;
    int most = atomic_load(g->most);
    while (now > most && !atomic_compare_exchange_weak(g->most, &most, now)) {
    }
    for (int64_t until = test_now_ms() + slack_ms(5000);
         atomic_load(g->most) < g->want && test_now_ms() < until;)
        test_sleep_ms(1);
    atomic_fetch_sub(g->inside, 1);
    g->rc = dlock_lock_release(g->l);
    return NULL;
}

static void test_16_reader_threads_of_one_client_are_inside_at_once(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = NULL;
    assert_int_equal(redis_fixture_start(NULL, &f), 0);
    dlock_client *c = connect_client(f);
    dlock_rwlock *rw = NULL;
    ASSERT_RC(dlock_rwlock_new(c, "gathering", &rw), DLOCK_OK);
    enum { N = 16 };
    atomic_int inside = 0, most = 0;
    gathering_reader g[N];
    pthread_t t[N];
    for (int i = 0; i < N; i++) {
        g[i] = (gathering_reader){
            .l = dlock_rwlock_read(rw), .inside = &inside, .most = &most, .want = N};
        assert_int_equal(pthread_create(&t[i], NULL, gathering_reader_main, &g[i]), 0);
    }
    for (int i = 0; i < N; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        ASSERT_RC(g[i].rc, DLOCK_OK);
    }
    assert_int_equal(atomic_load(&most), N);
    assert_int_equal(redis_fixture_int(f, "EXISTS gathering"), 0);
    dlock_rwlock_free(rw);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_random_read_write_mix_of_2_clients_x_6_threads_has_no_violation_and_no_lost_update),
        cmocka_unit_test(
            test_writer_gets_in_under_a_continuous_stream_of_readers_within_fair_wait_plus_2_s),
        cmocka_unit_test(test_16_reader_threads_of_one_client_are_inside_at_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
