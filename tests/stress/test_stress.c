/* SPDX-License-Identifier: MIT */
/* test_stress.c — mutual exclusion under load: many processes x threads on a few locks,
 * every critical section logged by the shared-memory checker (tests/support/checker.h).
 *
 * What is proven:
 * - the checker itself catches what it must: overlapping sections, lost updates, falling
 *   tokens, unfinished workers and sections never exited, a reader's section meeting a
 *   writer's while readers' sections may meet each other (synthetic logs), two threads
 *   sharing a section without a lock, and processes forked by the load harness below doing
 *   the same (so the shared log does cross process boundaries);
 * - 4 processes x 8 threads on 4 reentrant locks for 20 s (x DLOCK_TEST_SCALE, at least
 *   3 s): no two sections of one lock overlap, each lock's counter is exact, every worker
 *   finished, nothing is left in Redis;
 * - the same on 4 fenced locks (shorter): the token of each holder is above the previous
 *   holder's, per lock, and each lock's token counter equals its number of acquisitions;
 * - a semaphore of one permit is a mutex: 2 processes x 4 threads, 5 s, and the permit is
 *   back at the end;
 * - fair locks (issue 7): 3 processes x 4 threads on 2 fair locks for 6 s: as for the
 *   reentrant lock, and the line is gone afterwards (redisson_lock_queue:{N} and
 *   redisson_lock_timeout:{N} absent, nothing at all left in Redis);
 * - a read-write lock (issue 8): 3 processes x 4 threads on 2 read-write locks for 6 s, 20 %
 *   of the sections on the write half: writers' sections never overlap each other (one
 *   checker, exact counter), no reader's section overlaps a writer's (the readers' own
 *   log, compared with checker_check_excluded()), readers did share, and nothing is left
 *   in Redis (hash, {N}:rwlock_writers, read holds' timeout keys).
 *
 * The harness: the test computes a deadline and forks the processes; each makes its own
 * client after the fork, its threads pick one of the objects at random for every section
 * until the deadline, and the process ends with test_child_exit(). Worker ids are
 * process * threads + thread. Figures are printed as "# ...".
 *
 * It runs about 45 s: each load runs for a fixed time (the checker proves something only
 * after many contended hand-overs), which is not a state to wait for; DLOCK_TEST_SCALE
 * shortens the loads. Nothing in it bounds how fast anything happens. */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "checker.h"
#include "dlock.h"
#include "redis_fixture.h"
#include "test_util.h"

#define BUDGET_S 120
#define MAX_OBJECTS 4
#define MAX_PROCESSES 8
#define MAX_THREADS 16
/* Records per checker. A contended lock hands over some thousands of times a second, so
 * this is far above what 20 s can fill; mapped lazily, so it costs only what is used. */
#define LOG_CAPACITY (1L << 21)

static int64_t scaled_ms(int64_t ms, int64_t at_least) {
    int64_t v = (int64_t)((double)ms * test_scale());
    return v < at_least ? at_least : v;
}

static redis_fixture *start_server(void) {
    redis_fixture *f = NULL;
    assert_int_equal(redis_fixture_start(NULL, &f), 0);
    return f;
}

/* ---- the checker on synthetic logs --------------------------------------------------------- */

static void sleep_us(long us) {
    struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static void test_checker_passes_a_clean_log_and_names_each_kind_of_problem(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    printf("# checker self-test: the logs marked FAILED below are meant to fail\n");

    /* a clean fenced log: one worker, three sections, rising tokens */
    checker *k = checker_new("clean", 2, 16, true);
    for (uint64_t t = 1; t <= 3; t++) {
        long s = checker_enter(k, (int)t % 2);
        checker_exit(k, s, t * 10);
    }
    checker_finished(k, 0);
    checker_finished(k, 1);
    checker_report r = checker_check(k);
    assert_true(r.ok);
    assert_int_equal(r.sections, 3);
    assert_int_equal(r.recorded, 3);
    assert_int_equal(r.counter, 3);
    assert_int_equal(r.overlaps, 0);
    checker_free(k);

    /* a section entered while another is inside; a worker that never finished */
    k = checker_new("overlap", 2, 16, false);
    long a = checker_enter(k, 0);
    sleep_us(100);
    long b = checker_enter(k, 1);
    checker_exit(k, b, 0);
    checker_exit(k, a, 0);
    checker_finished(k, 0);
    r = checker_check(k);
    assert_false(r.ok);
    assert_int_equal(r.overlaps, 1);
    assert_int_equal(r.unfinished, 1);
    assert_int_equal(r.token_violations, 0);
    assert_non_null(strstr(r.first_problem, "overlap"));
    checker_free(k);

    /* tokens: a repeat, a fall, and a fenced section without one */
    k = checker_new("tokens", 1, 16, true);
    const uint64_t tokens[] = {5, 5, 7, 6, 0, 9};
    for (size_t i = 0; i < sizeof(tokens) / sizeof(tokens[0]); i++) {
        long s = checker_enter(k, 0);
        checker_exit(k, s, tokens[i]);
        sleep_us(10);
    }
    checker_finished(k, 0);
    r = checker_check(k);
    assert_false(r.ok);
    assert_int_equal(r.overlaps, 0);
    assert_int_equal(r.token_violations, 3); /* 5 after 5, 6 after 7, 0 */
    assert_non_null(strstr(r.first_problem, "token 5 after"));
    checker_free(k);

    /* a section never exited, a full log, a reported error */
    k = checker_new("open", 1, 2, false);
    checker_exit(k, checker_enter(k, 0), 0);
    (void)checker_enter(k, 0);                 /* the worker "died" inside */
    assert_int_equal(checker_enter(k, 0), -1); /* no room: counted, not logged */
    checker_exit(k, -1, 0);
    checker_error(k, 0, "acquire: %s", "DLOCK_ECONN");
    checker_finished(k, 0);
    r = checker_check(k);
    assert_false(r.ok);
    assert_int_equal(r.sections, 3);
    assert_int_equal(r.counter, 3);
    assert_int_equal(r.recorded, 1);
    assert_int_equal(r.open, 1);
    assert_int_equal(r.dropped, 1);
    assert_int_equal(r.errors, 1);
    assert_string_equal(r.first_error, "worker 0: acquire: DLOCK_ECONN");
    checker_free(k);

    /* readers against writers: two readers inside together are fine, a reader inside
     * while a writer is, is not (whichever entered first) */
    checker *wk = checker_new("writers", 3, 16, false);
    checker *rk = checker_new("readers", 3, 16, false);
    long r1 = checker_enter(rk, 0);
    long r2 = checker_enter(rk, 1);
    sleep_us(100);
    checker_exit(rk, r2, 0);
    checker_exit(rk, r1, 0);
    sleep_us(100);
    checker_exit(wk, checker_enter(wk, 2), 0); /* alone: clean */
    sleep_us(100);
    checker_cross_report x = checker_check_excluded(wk, rk);
    assert_true(x.ok);
    assert_int_equal(x.shared_sections, 2);
    assert_int_equal(x.shared_overlapping, 1);
    assert_int_equal(x.conflicts, 0);
    long wslot = checker_enter(wk, 2);
    sleep_us(100);
    long r3 = checker_enter(rk, 0); /* a reader while the writer is inside */
    sleep_us(100);
    checker_exit(wk, wslot, 0);
    sleep_us(100);
    long w2 = checker_enter(wk, 2); /* a writer while the reader is inside */
    checker_exit(rk, r3, 0);
    checker_exit(wk, w2, 0);
    x = checker_check_excluded(wk, rk);
    assert_false(x.ok);
    assert_int_equal(x.shared_sections, 3);
    assert_int_equal(x.conflicts, 1); /* one reader section, meeting two writers */
    assert_non_null(strstr(x.first_conflict, "readers worker 0"));
    checker_free(wk);
    checker_free(rk);
}

/* ---- the checker against threads that share a section without a lock ---------------------- */

typedef struct unlocked_thread {
    checker *k;
    int id;
    long sections;
    pthread_barrier_t *start;
} unlocked_thread;

static void *unlocked_loop(void *arg) {
    unlocked_thread *t = arg;
    pthread_barrier_wait(t->start);
    for (long i = 0; i < t->sections; i++)
        checker_exit(t->k, checker_enter(t->k, t->id), 0);
    checker_finished(t->k, t->id);
    return NULL;
}

static void test_checker_sees_two_threads_without_a_lock_overlap_and_lose_updates(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    const long sections = test_scaled(20000);
    printf("# checker self-test: this log is meant to fail\n");
    checker *k = checker_new("unlocked-threads", 2, 2 * sections, false);
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, 2);
    unlocked_thread t[2];
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        t[i] = (unlocked_thread){.k = k, .id = i, .sections = sections, .start = &start};
        assert_int_equal(pthread_create(&th[i], NULL, unlocked_loop, &t[i]), 0);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start);
    checker_report r = checker_check(k);
    checker_free(k);
    assert_false(r.ok);
    assert_int_equal(r.sections, 2 * sections);
    assert_int_equal(r.unfinished, 0);
    if (r.overlaps == 0)
        fail_msg("two threads in one section without a lock: no overlap found");
    if (r.counter >= r.expected)
        fail_msg("two threads in one section without a lock: counter %ld of %ld, nothing lost",
                 r.counter, r.expected);
    printf("# unlocked threads: %ld overlaps, %ld of %ld increments lost\n", r.overlaps,
           r.expected - r.counter, r.expected);
}

/* ---- the load harness ---------------------------------------------------------------------- */

typedef enum object_kind {
    KIND_NONE,
    KIND_LOCK,
    KIND_FENCED,
    KIND_SEMAPHORE,
    KIND_FAIR,
    KIND_RWLOCK
} object_kind;

static const char *kind_name(object_kind kind) {
    switch (kind) {
    case KIND_NONE:
        return "no lock";
    case KIND_LOCK:
        return "lock";
    case KIND_FENCED:
        return "fenced lock";
    case KIND_SEMAPHORE:
        return "semaphore";
    case KIND_FAIR:
        return "fair lock";
    case KIND_RWLOCK:
        return "read-write lock";
    }
    return "?";
}

typedef struct load {
    object_kind kind;
    const char *url;
    int processes, threads, objects;
    int64_t deadline_ms;      /* monotonic; the clock is the same in every process */
    int write_percent;        /* KIND_RWLOCK: share of sections taken on the write half */
    checker *k[MAX_OBJECTS];  /* the sections (KIND_RWLOCK: the writers'); every error */
    checker *rk[MAX_OBJECTS]; /* KIND_RWLOCK: the readers' sections */
    char name[MAX_OBJECTS][32];
} load;

typedef struct load_process {
    const load *ld;
    int index;
    dlock_client *c;
    dlock_lock *l[MAX_OBJECTS];
    dlock_rwlock *rw[MAX_OBJECTS];
    dlock_semaphore *s[MAX_OBJECTS];
} load_process;

/* Makes process p's handle on object i, by kind (KIND_NONE: none). */
static int make_object(load_process *p, int i) {
    const char *name = p->ld->name[i];
    switch (p->ld->kind) {
    case KIND_NONE:
        return DLOCK_OK;
    case KIND_LOCK:
        return dlock_lock_new(p->c, name, &p->l[i]);
    case KIND_FENCED:
        return dlock_fencedlock_new(p->c, name, &p->l[i]);
    case KIND_FAIR:
        return dlock_fairlock_new(p->c, name, &p->l[i]);
    case KIND_RWLOCK:
        return dlock_rwlock_new(p->c, name, &p->rw[i]);
    case KIND_SEMAPHORE:
        return dlock_semaphore_new(p->c, name, &p->s[i]);
    }
    return DLOCK_EINVAL;
}

/* The lock a section of object o takes: the object's, or the read-write lock's half. */
static dlock_lock *object_lock(load_process *p, int o, bool write) {
    if (p->ld->kind == KIND_RWLOCK)
        return write ? dlock_rwlock_write(p->rw[o]) : dlock_rwlock_read(p->rw[o]);
    return p->l[o];
}

typedef struct load_worker {
    load_process *p;
    int id;
    unsigned seed;
} load_worker;

static int object_take(load_process *p, int o, bool write, int64_t lease_ms) {
    switch (p->ld->kind) {
    case KIND_NONE:
        sleep_us(20);
        return DLOCK_OK; /* a pause, as a round trip would be */
    case KIND_LOCK:
    case KIND_FENCED:
    case KIND_FAIR:
    case KIND_RWLOCK:
        return dlock_lock_acquire(object_lock(p, o, write), lease_ms);
    case KIND_SEMAPHORE:
        return dlock_semaphore_acquire(p->s[o], 1);
    }
    return DLOCK_EINVAL;
}

static int object_give(load_process *p, int o, bool write) {
    switch (p->ld->kind) {
    case KIND_NONE:
        return DLOCK_OK;
    case KIND_LOCK:
    case KIND_FENCED:
    case KIND_FAIR:
    case KIND_RWLOCK:
        return dlock_lock_release(object_lock(p, o, write));
    case KIND_SEMAPHORE:
        return dlock_semaphore_release(p->s[o], 1);
    }
    return DLOCK_EINVAL;
}

static void *load_worker_main(void *arg) {
    load_worker *w = arg;
    load_process *p = w->p;
    const load *ld = p->ld;
    /* half the workers hold by the watchdog, half by an explicit lease */
    const int64_t lease_ms = w->id % 2 ? 30000 : DLOCK_WATCHDOG;
    while (test_now_ms() < ld->deadline_ms) {
        int o = (int)(rand_r(&w->seed) % (unsigned)ld->objects);
        /* read-write lock: write_percent of the sections write, the rest read */
        const bool write =
            ld->kind != KIND_RWLOCK || (int)(rand_r(&w->seed) % 100) < ld->write_percent;
        checker *k = ld->k[o];               /* errors go here whatever the half */
        checker *sk = write ? k : ld->rk[o]; /* the section's log */
        int rc = object_take(p, o, write, lease_ms);
        if (rc != DLOCK_OK) {
            checker_error(k, w->id, "acquire %s%s: %s (%s)", ld->name[o], write ? "" : " (read)",
                          dlock_err_name(rc), dlock_last_error());
            return NULL; /* unfinished */
        }
        long slot = checker_enter(sk, w->id);
        uint64_t token = 0;
        if (ld->kind == KIND_FENCED && (rc = dlock_lock_token(p->l[o], &token)) != DLOCK_OK)
            checker_error(k, w->id, "token %s: %s", ld->name[o], dlock_err_name(rc));
        checker_exit(sk, slot, token);
        if ((rc = object_give(p, o, write)) != DLOCK_OK) {
            checker_error(k, w->id, "release %s%s: %s (%s)", ld->name[o], write ? "" : " (read)",
                          dlock_err_name(rc), dlock_last_error());
            return NULL;
        }
    }
    for (int o = 0; o < ld->objects; o++) {
        checker_finished(ld->k[o], w->id);
        if (ld->rk[o] != NULL)
            checker_finished(ld->rk[o], w->id);
    }
    return NULL;
}

/* One load process: its own client, made after the fork, and one handle per object shared by
 * its threads. Reports trouble through the checkers and its exit status. */
static _Noreturn void load_process_main(const load *ld, int index) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    load_process p = {.ld = ld, .index = index};
    int status = 0, rc = DLOCK_OK;
    if (ld->kind != KIND_NONE) {
        dlock_options o;
        dlock_options_init(&o);
        o.url = ld->url;
        rc = dlock_client_new(&o, &p.c);
        for (int i = 0; rc == DLOCK_OK && i < ld->objects; i++)
            rc = make_object(&p, i);
    }
    if (rc != DLOCK_OK) {
        checker_error(ld->k[0], index * ld->threads, "process %d setup: %s (%s)", index,
                      dlock_err_name(rc), dlock_last_error());
        status = 1;
    } else {
        load_worker w[MAX_THREADS];
        pthread_t t[MAX_THREADS];
        int started = 0;
        for (int i = 0; i < ld->threads; i++) {
            w[i] = (load_worker){.p = &p,
                                 .id = index * ld->threads + i,
                                 .seed = (unsigned)(index * 7919 + i * 104729 + 1)};
            if (pthread_create(&t[i], NULL, load_worker_main, &w[i]) != 0) {
                checker_error(ld->k[0], w[i].id, "pthread_create failed");
                status = 1;
                break;
            }
            started++;
        }
        for (int i = 0; i < started; i++)
            pthread_join(t[i], NULL);
    }
    for (int i = 0; i < ld->objects; i++) {
        dlock_lock_free(p.l[i]);
        dlock_rwlock_free(p.rw[i]);
        dlock_semaphore_free(p.s[i]);
    }
    if (p.c != NULL && dlock_client_free(p.c) != DLOCK_OK)
        status = 1;
    test_child_exit(status);
}

/* Sets up the checkers and names; the caller sets kind, url, processes, threads, objects. */
static void load_init(load *ld, const char *prefix) {
    assert_true(ld->objects >= 1 && ld->objects <= MAX_OBJECTS);
    assert_true(ld->processes >= 1 && ld->processes <= MAX_PROCESSES);
    assert_true(ld->threads >= 1 && ld->threads <= MAX_THREADS);
    for (int o = 0; o < ld->objects; o++) {
        snprintf(ld->name[o], sizeof(ld->name[o]), "%s-%d", prefix, o);
        ld->k[o] = checker_new(ld->name[o], ld->processes * ld->threads, LOG_CAPACITY,
                               ld->kind == KIND_FENCED);
        if (ld->kind == KIND_RWLOCK) {
            char readers[48];
            snprintf(readers, sizeof(readers), "%s readers", ld->name[o]);
            ld->rk[o] = checker_new(readers, ld->processes * ld->threads, LOG_CAPACITY, false);
        }
    }
}

static void load_destroy(load *ld) {
    for (int o = 0; o < ld->objects; o++) {
        checker_free(ld->k[o]);
        checker_free(ld->rk[o]);
    }
}

typedef struct load_result {
    checker_report r[MAX_OBJECTS];
    checker_cross_report x[MAX_OBJECTS]; /* KIND_RWLOCK: readers against writers */
    long sections;
    int64_t took_ms;
    int failed_processes;
} load_result;

/* Forks the processes, runs them for duration_ms, reaps them and checks every log. */
static load_result load_run(load *ld, int64_t duration_ms) {
    load_result res;
    memset(&res, 0, sizeof(res));
    pid_t pid[MAX_PROCESSES];
    int64_t start = test_now_ms();
    ld->deadline_ms = start + duration_ms;
    fflush(stdout);
    fflush(stderr);
    for (int i = 0; i < ld->processes; i++) {
        pid[i] = test_fork();
        assert_true(pid[i] >= 0);
        if (pid[i] == 0)
            load_process_main(ld, i);
    }
    for (int i = 0; i < ld->processes; i++) {
        int status = 0;
        assert_int_equal(waitpid(pid[i], &status, 0), pid[i]);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            res.failed_processes++;
            fprintf(stderr, "load process %d: %s %d\n", i,
                    WIFEXITED(status) ? "exit status" : "killed by signal",
                    WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
        }
    }
    res.took_ms = test_now_ms() - start;
    for (int o = 0; o < ld->objects; o++) {
        res.r[o] = checker_check(ld->k[o]);
        res.sections += res.r[o].sections;
        if (ld->rk[o] != NULL) {
            res.x[o] = checker_check_excluded(ld->k[o], ld->rk[o]);
            res.sections += res.x[o].shared_sections;
        }
    }
    printf("# %s: %d processes x %d threads on %d, %ld sections in %lld ms, %.0f sections/s\n",
           kind_name(ld->kind), ld->processes, ld->threads, ld->objects, res.sections,
           (long long)res.took_ms,
           (double)res.sections * 1000.0 / (double)(res.took_ms ? res.took_ms : 1));
    return res;
}

/* Every log is as it must be, every process exited 0, and no lock is left in Redis. */
static void assert_load_clean(redis_fixture *f, const load *ld, const load_result *res) {
    assert_int_equal(res->failed_processes, 0);
    for (int o = 0; o < ld->objects; o++) {
        const checker_report *r = &res->r[o];
        if (!r->ok)
            fail_msg("%s: %ld overlaps, counter %ld of %ld, %d unfinished, %ld token violations, "
                     "%ld errors (%s) %s",
                     ld->name[o], r->overlaps, r->counter, r->expected, r->unfinished,
                     r->token_violations, r->errors, r->first_error, r->first_problem);
        if (r->sections == 0)
            fail_msg("%s: nobody ever held it", ld->name[o]);
        if (ld->kind != KIND_SEMAPHORE)
            assert_int_equal(redis_fixture_int(f, "EXISTS %s", ld->name[o]), 0);
        if (ld->kind == KIND_RWLOCK) {
            const checker_cross_report *x = &res->x[o];
            if (!x->ok)
                fail_msg("%s: %ld reader sections meet a writer's (%s), %ld never exited, "
                         "%ld dropped",
                         ld->name[o], x->conflicts, x->first_conflict, x->shared_open,
                         x->shared_dropped);
            if (x->shared_sections == 0)
                fail_msg("%s: nobody ever read", ld->name[o]);
            /* no waiting writer left behind, no read hold's timeout key */
            assert_int_equal(redis_fixture_int(f, "EXISTS {%s}:rwlock_writers", ld->name[o]), 0);
        }
        if (ld->kind == KIND_FAIR) {
            /* nobody left in the line */
            assert_int_equal(redis_fixture_int(f, "EXISTS redisson_lock_queue:{%s}", ld->name[o]),
                             0);
            assert_int_equal(redis_fixture_int(f, "EXISTS redisson_lock_timeout:{%s}", ld->name[o]),
                             0);
        }
    }
    /* the new kinds leave nothing at all (the read holds' timeout keys included) */
    if (ld->kind == KIND_FAIR || ld->kind == KIND_RWLOCK)
        assert_int_equal(redis_fixture_int(f, "DBSIZE"), 0);
}

static void test_load_harness_sees_processes_without_a_lock_overlap(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    printf("# checker self-test: this log is meant to fail\n");
    load ld = {.kind = KIND_NONE, .processes = 2, .threads = 2, .objects = 1};
    load_init(&ld, "unlocked");
    load_result res = load_run(&ld, scaled_ms(500, 300));
    load_destroy(&ld);
    assert_int_equal(res.failed_processes, 0);
    assert_false(res.r[0].ok);
    assert_int_equal(res.r[0].unfinished, 0);
    if (res.r[0].overlaps == 0)
        fail_msg("4 workers in 2 processes without a lock: no overlap found in %ld sections",
                 res.r[0].sections);
}

/* ---- under load ---------------------------------------------------------------------------- */

static void test_four_processes_eight_threads_on_four_locks_never_overlap(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    load ld = {.kind = KIND_LOCK,
               .url = redis_fixture_unix_url(f),
               .processes = 4,
               .threads = 8,
               .objects = 4};
    load_init(&ld, "stress");
    load_result res = load_run(&ld, scaled_ms(20000, 3000));
    assert_load_clean(f, &ld, &res);
    load_destroy(&ld);
    redis_fixture_stop(f);
}

static void test_fenced_locks_under_load_give_each_holder_a_higher_token(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    load ld = {.kind = KIND_FENCED,
               .url = redis_fixture_unix_url(f),
               .processes = 4,
               .threads = 4,
               .objects = 4};
    load_init(&ld, "fenced");
    load_result res = load_run(&ld, scaled_ms(6000, 2000));
    assert_load_clean(f, &ld, &res);
    for (int o = 0; o < ld.objects; o++) {
        /* one token per acquisition, and every acquisition made a section */
        long long tokens = redis_fixture_int(f, "GET redisson_lock_token:{%s}", ld.name[o]);
        if (tokens != res.r[o].sections)
            fail_msg("%s: token counter %lld after %ld acquisitions", ld.name[o], tokens,
                     res.r[o].sections);
    }
    load_destroy(&ld);
    redis_fixture_stop(f);
}

static void test_semaphore_of_one_permit_is_a_mutex_under_load(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    load ld = {.kind = KIND_SEMAPHORE,
               .url = redis_fixture_unix_url(f),
               .processes = 2,
               .threads = 4,
               .objects = 1};
    load_init(&ld, "sem");
    /* set before any process starts (REDIS_LAYOUT.md: the string holds the permits) */
    char *set = redis_fixture_str(f, "SET %s 1", ld.name[0]);
    assert_non_null(set);
    assert_string_equal(set, "OK");
    free(set);
    load_result res = load_run(&ld, scaled_ms(5000, 2000));
    assert_load_clean(f, &ld, &res);
    assert_int_equal(redis_fixture_int(f, "GET %s", ld.name[0]), 1);
    load_destroy(&ld);
    redis_fixture_stop(f);
}

static void test_fair_locks_under_load_never_overlap_and_leave_no_line(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    load ld = {.kind = KIND_FAIR,
               .url = redis_fixture_unix_url(f),
               .processes = 3,
               .threads = 4,
               .objects = 2};
    load_init(&ld, "fair");
    load_result res = load_run(&ld, scaled_ms(6000, 2000));
    assert_load_clean(f, &ld, &res);
    load_destroy(&ld);
    redis_fixture_stop(f);
}

static void test_rwlock_under_load_writers_exclude_everyone_readers_share(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    load ld = {.kind = KIND_RWLOCK,
               .url = redis_fixture_unix_url(f),
               .processes = 3,
               .threads = 4,
               .objects = 2,
               .write_percent = 20};
    load_init(&ld, "rw");
    load_result res = load_run(&ld, scaled_ms(6000, 2000));
    assert_load_clean(f, &ld, &res);
    long writes = 0, reads = 0, shared = 0;
    for (int o = 0; o < ld.objects; o++) {
        writes += res.r[o].sections;
        reads += res.x[o].shared_sections;
        shared += res.x[o].shared_overlapping;
    }
    printf("# read-write lock: %ld writes, %ld reads (%ld began beside another reader)\n", writes,
           reads, shared);
    load_destroy(&ld);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_checker_passes_a_clean_log_and_names_each_kind_of_problem),
        cmocka_unit_test(test_checker_sees_two_threads_without_a_lock_overlap_and_lose_updates),
        cmocka_unit_test(test_load_harness_sees_processes_without_a_lock_overlap),
        cmocka_unit_test(test_four_processes_eight_threads_on_four_locks_never_overlap),
        cmocka_unit_test(test_fenced_locks_under_load_give_each_holder_a_higher_token),
        cmocka_unit_test(test_semaphore_of_one_permit_is_a_mutex_under_load),
        cmocka_unit_test(test_fair_locks_under_load_never_overlap_and_leave_no_line),
        cmocka_unit_test(test_rwlock_under_load_writers_exclude_everyone_readers_share),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
