/* SPDX-License-Identifier: MIT */
/* semaphore.c — a connection pool shared by two services: the semaphore (Redisson
 * RSemaphore).
 *
 * A database accepts at most 3 connections. Two services (two dlock clients, each its own
 * connections and client id) run 4 worker threads each, and every query first takes a
 * slot of the semaphore "example:db-pool" and gives it back afterwards. The "database" is
 * a counter in this process that records how many queries are inside at once; the only
 * thing that limits them is the semaphore in Redis (the two clients share nothing else).
 *
 * Reads the server from $DLOCK_URL (scripts/run-demo.sh starts a private redis-server and
 * sets it; ctest runs this program that way). Every step checks its result and the
 * program exits 0 only if each call answered as this comment says:
 *
 *   1. client A creates the pool with 3 slots (try_set_permits); client B finds it set
 *   2. 8 workers, 4 per client, run 24 queries: never more than 3 inside the database.
 *      A worker first tries without waiting and, when the pool is full, waits up to 10 s
 *   3. a migration takes the whole pool (acquire 3): a report that waits 300 ms gives up
 *      (DLOCK_ETIMEDOUT); a report that waits up to 5 s gets in as soon as the migration
 *      releases (woken by the release's message, not by polling)
 *   4. available; the limit is raised and lowered again with add_permits
 *   5. maintenance: drain takes every free slot, so no query can start; the slots are
 *      then given back
 *
 * Build: it is example_semaphore in <build>/examples (cmake); run it with
 *   scripts/run-demo.sh build/examples/example_semaphore */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "dlock.h"

#define POOL_NAME "example:db-pool"
enum { SLOTS = 3, SERVICES = 2, WORKERS_PER_SERVICE = 4, QUERIES = 3, QUERY_MS = 40 };

/* ---- small helpers ------------------------------------------------------------------------ */

static void sleep_ms(int64_t ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Says whether rc is what the step expects; if not, prints the code's name and the
 * detail dlock keeps for the calling thread. */
static bool expect(int rc, int want, const char *what) {
    if (rc == want)
        return true;
    fprintf(stderr, "FAILED: %s: got %s, expected %s (%s)\n", what, dlock_err_name(rc),
            dlock_err_name(want), dlock_last_error());
    return false;
}

static bool check(bool ok, const char *what) {
    if (!ok)
        fprintf(stderr, "FAILED: %s\n", what);
    return ok;
}

/* ---- the database ------------------------------------------------------------------------- */

/* Stands for a server that breaks (or refuses) past SLOTS connections: it only counts. */
static atomic_int inside;
static atomic_int max_inside;
static atomic_int queries_run;

static void database_query(void) {
    int now = atomic_fetch_add(&inside, 1) + 1;
    int seen = atomic_load(&max_inside);
    while (now > seen && !atomic_compare_exchange_weak(&max_inside, &seen, now)) {
    }
    sleep_ms(QUERY_MS);
    atomic_fetch_sub(&inside, 1);
    atomic_fetch_add(&queries_run, 1);
}

/* ---- step 2: the workers ------------------------------------------------------------------ */

typedef struct worker {
    dlock_semaphore *pool; /* its service's handle: one per client */
    int waited;            /* queries that found the pool full and waited for a slot */
    bool ok;
} worker;

static void *work(void *arg) {
    worker *w = arg;
    for (int q = 0; q < QUERIES; q++) {
        /* A single attempt first (wait 0); when every slot is taken, wait for one, but
         * not forever: a query that cannot get a connection in 10 s reports an error. */
        int rc = dlock_semaphore_try_acquire(w->pool, 1, 0);
        if (rc == DLOCK_ETIMEDOUT) {
            w->waited++;
            rc = dlock_semaphore_try_acquire(w->pool, 1, 10000);
        }
        if (!expect(rc, DLOCK_OK, "worker: try_acquire"))
            return NULL;
        database_query();
        /* Always give the slot back: nobody else will (a semaphore permit has no owner and
         * no lease; a crashed worker's slot is gone for good, see docs/semaphore.md). */
        if (!expect(dlock_semaphore_release(w->pool, 1), DLOCK_OK, "worker: release"))
            return NULL;
    }
    w->ok = true;
    return NULL;
}

/* ---- step 3: reports while a migration holds the whole pool ------------------------------- */

typedef struct report {
    dlock_semaphore *pool;
    int64_t wait_ms;
    int rc;
    int64_t waited_ms;
} report;

static void *run_report(void *arg) {
    report *r = arg;
    int64_t start = now_ms();
    r->rc = dlock_semaphore_try_acquire(r->pool, 1, r->wait_ms);
    r->waited_ms = now_ms() - start;
    if (r->rc == DLOCK_OK) {
        database_query();
        int rc = dlock_semaphore_release(r->pool, 1);
        if (!expect(rc, DLOCK_OK, "report: release"))
            r->rc = rc;
    } else if (r->rc != DLOCK_ETIMEDOUT) {
        expect(r->rc, DLOCK_OK, "report: try_acquire"); /* prints the detail */
    }
    return NULL;
}

/* ---- the program -------------------------------------------------------------------------- */

int main(void) {
    int status = 1, rc;
    dlock_client *clients[SERVICES] = {NULL};
    dlock_semaphore *pools[SERVICES] = {NULL};
    bool was_set = false;
    int64_t available = 0, drained = 0;

    /* 1. Two clients stand for two services. url NULL: $DLOCK_URL, else
     * redis://127.0.0.1:6379. A semaphore handle is only a name: no I/O until used. */
    for (int i = 0; i < SERVICES; i++) {
        rc = dlock_client_new(NULL, &clients[i]);
        if (!expect(rc, DLOCK_OK, "dlock_client_new"))
            goto out;
        rc = dlock_semaphore_new(clients[i], POOL_NAME, &pools[i]);
        if (!expect(rc, DLOCK_OK, "dlock_semaphore_new"))
            goto out;
    }

    /* Whichever service starts first creates the pool; try_set_permits never overwrites
     * an existing count (it would hand out slots that are in use). */
    if (!expect(dlock_semaphore_try_set_permits(pools[0], SLOTS, &was_set), DLOCK_OK,
                "A: try_set_permits"))
        goto out;
    if (!was_set) {
        /* Left by an earlier run against the same Redis: usable only if it is whole. */
        if (!expect(dlock_semaphore_available(pools[0], &available), DLOCK_OK, "available") ||
            !check(available == SLOTS, "an existing " POOL_NAME " has all 3 slots free "
                                       "(delete the key if an earlier run was interrupted)"))
            goto out;
    }
    printf("1. pool \"%s\": client A %s it with %d slots", POOL_NAME, was_set ? "created" : "found",
           SLOTS);
    if (!expect(dlock_semaphore_try_set_permits(pools[1], SLOTS, &was_set), DLOCK_OK,
                "B: try_set_permits") ||
        !check(!was_set, "B finds the pool already set"))
        goto out;
    printf("; client B found it set (was_set false)\n");

    /* 2. Eight workers, four on each client, all at once. */
    worker workers[SERVICES * WORKERS_PER_SERVICE];
    pthread_t threads[SERVICES * WORKERS_PER_SERVICE];
    int started = 0;
    for (int i = 0; i < SERVICES * WORKERS_PER_SERVICE; i++) {
        workers[i] = (worker){.pool = pools[i % SERVICES]};
        if (pthread_create(&threads[i], NULL, work, &workers[i]) != 0)
            break;
        started++;
    }
    int waited = 0;
    bool workers_ok = started == SERVICES * WORKERS_PER_SERVICE;
    for (int i = 0; i < started; i++) {
        pthread_join(threads[i], NULL);
        workers_ok = workers_ok && workers[i].ok;
        waited += workers[i].waited;
    }
    if (!check(workers_ok, "every worker ran its queries") ||
        !check(atomic_load(&queries_run) == SERVICES * WORKERS_PER_SERVICE * QUERIES,
               "24 queries ran") ||
        !check(atomic_load(&max_inside) <= SLOTS, "never more than 3 inside the database"))
        goto out;
    printf("2. %d workers on 2 clients ran %d queries: at most %d inside the database at once "
           "(limit %d)\n",
           started, atomic_load(&queries_run), atomic_load(&max_inside), SLOTS);
    printf("   %d of them found the pool full and waited for a slot\n", waited);

    /* 3. A schema migration on service A needs the database to itself: it takes all three
     * slots in one call (waiting, if need be, until three are free at once). */
    if (!expect(dlock_semaphore_acquire(pools[0], SLOTS), DLOCK_OK, "migration: acquire 3") ||
        !expect(dlock_semaphore_available(pools[0], &available), DLOCK_OK, "available") ||
        !check(available == 0, "no slot left during the migration"))
        goto out;
    printf("3. a migration on A took all %d slots (acquire %d); available %" PRId64 "\n", SLOTS,
           SLOTS, available);

    /* A report on service B that can wait 300 ms gives up. */
    report impatient = {.pool = pools[1], .wait_ms = 300};
    run_report(&impatient);
    if (!expect(impatient.rc, DLOCK_ETIMEDOUT, "impatient report: try_acquire(1, 300 ms)"))
        goto out;
    printf("   a report on B: try_acquire(1, wait 300 ms) -> %s after %" PRId64 " ms\n",
           dlock_err_name(impatient.rc), impatient.waited_ms);

    /* Another report waits up to 5 s; the migration ends 300 ms later. The release
     * publishes the new count and the waiting client tries at once. */
    report patient = {.pool = pools[1], .wait_ms = 5000};
    pthread_t patient_thread;
    if (!check(pthread_create(&patient_thread, NULL, run_report, &patient) == 0, "pthread_create"))
        goto out;
    sleep_ms(300);
    rc = dlock_semaphore_release(pools[0], SLOTS);
    pthread_join(patient_thread, NULL);
    if (!expect(rc, DLOCK_OK, "migration: release 3") ||
        !expect(patient.rc, DLOCK_OK, "patient report: try_acquire(1, 5 s)"))
        goto out;
    printf("   the migration released its slots; a report on B that waits up to 5 s got one "
           "after %" PRId64 " ms\n",
           patient.waited_ms);

    /* 4. The pool's size is just the count in Redis: the DBA raises the connection limit
     * for a while, and lowers it again. */
    int64_t raised = 0;
    if (!expect(dlock_semaphore_available(pools[1], &available), DLOCK_OK, "available") ||
        !check(available == SLOTS, "all slots free again") ||
        !expect(dlock_semaphore_add_permits(pools[1], 2), DLOCK_OK, "add_permits(+2)") ||
        !expect(dlock_semaphore_available(pools[1], &raised), DLOCK_OK, "available") ||
        !check(raised == SLOTS + 2, "5 slots after +2") ||
        !expect(dlock_semaphore_add_permits(pools[1], -2), DLOCK_OK, "add_permits(-2)") ||
        !expect(dlock_semaphore_available(pools[1], &available), DLOCK_OK, "available") ||
        !check(available == SLOTS, "3 slots after -2"))
        goto out;
    printf("4. available %d; add_permits(+2) -> %" PRId64 "; add_permits(-2) -> %" PRId64 "\n",
           SLOTS, raised, available);

    /* 5. Maintenance: drain takes every free slot at once, so no new query can start. */
    if (!expect(dlock_semaphore_drain(pools[0], &drained), DLOCK_OK, "drain") ||
        !check(drained == SLOTS, "drain took the 3 free slots"))
        goto out;
    rc = dlock_semaphore_try_acquire(pools[1], 1, 0);
    if (!expect(rc, DLOCK_ETIMEDOUT, "try_acquire on a drained pool"))
        goto out;
    printf("5. maintenance: drain took %" PRId64 " slots; a query's try_acquire(1, 0) -> %s\n",
           drained, dlock_err_name(rc));
    /* ... maintenance done: the drained slots go back (release, like any other holder). */
    if (!expect(dlock_semaphore_release(pools[0], drained), DLOCK_OK, "release drained") ||
        !expect(dlock_semaphore_available(pools[1], &available), DLOCK_OK, "available") ||
        !check(available == SLOTS, "3 slots after maintenance"))
        goto out;
    printf("   maintenance over: released %" PRId64 " -> available %" PRId64 "\n", drained,
           available);

    status = 0;
    printf("OK\n");
out:
    /* Handles before their client. Freeing does no I/O. */
    for (int i = 0; i < SERVICES; i++) {
        dlock_semaphore_free(pools[i]);
        rc = dlock_client_free(clients[i]);
        if (rc != DLOCK_OK) {
            fprintf(stderr, "dlock_client_free: %s (%s)\n", dlock_err_name(rc), dlock_last_error());
            status = 1;
        }
    }
    return status;
}
