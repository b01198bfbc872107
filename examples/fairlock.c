/* SPDX-License-Identifier: MIT */
/* fairlock.c — a tour of the fair lock (Redisson RFairLock): a lock whose waiters get it in
 * the order they asked for it, across threads, processes and machines.
 *
 * Reads the server from $DLOCK_URL (scripts/run-demo.sh starts a private redis-server and
 * sets it; ctest runs this program that way). Every step checks its result and the
 * program exits 0 only if each call answered as this comment says:
 *
 *   1. a client (fair_wait_ms 1000, to keep the example short) and a fair lock
 *   2. acquire, acquire again (reentrant): hold count 2; another thread's try_acquire gives
 *      up (DLOCK_ETIMEDOUT) and its release is refused (DLOCK_ENOTOWNER)
 *   3. five print jobs ask for the lock while it is held (async acquires, owners 1..5):
 *      nothing runs until the holder's last release, then they run 1, 2, 3, 4, 5
 *   4. a job that waits while the holder keeps the lock for 2.5 x fair_wait_ms keeps its
 *      place: a job that asks later still comes after it
 *
 * Build: it is example_fairlock in <build>/examples (cmake); run it with
 *   scripts/run-demo.sh build/examples/example_fairlock */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "dlock.h"

/* How long a waiter that stops refreshing (its process died) keeps its place. The
 * default is 5 s; a live waiter refreshes every third of it, however long it waits. */
#define FAIR_WAIT_MS 1000
#define JOBS 5

/* ---- small helpers ------------------------------------------------------------------------ */

static void sleep_ms(int64_t ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

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

/* ---- step 2: another thread contends ------------------------------------------------------ */

typedef struct contender {
    dlock_lock *lock;
    int try_rc, release_rc;
} contender;

static void *contend(void *arg) {
    contender *c = arg;
    /* another owner: it waits 200 ms in line, gives up, and leaves the line at once */
    c->try_rc = dlock_lock_try_acquire(c->lock, 200, DLOCK_WATCHDOG);
    c->release_rc = dlock_lock_release(c->lock);
    return NULL;
}

/* ---- steps 3 and 4: print jobs on the async face -------------------------------------------- */

/* A job is an async owner: any non-zero id the application picks (below
 * DLOCK_THREAD_OWNER_BASE, so it never meets a thread's owner). Its callbacks run on the
 * client's I/O thread; they must be quick and make no blocking dlock call. */
typedef struct job {
    uint64_t owner;
    atomic_int acquired_status; /* 1 until the acquire callback ran */
    atomic_int released_status; /* 1 until the release callback ran */
    atomic_int turn;            /* when it ran among the jobs of its step */
} job;

static atomic_int turns;

static void job_released(dlock_lock *l, int status, void *arg) {
    (void)l;
    job *j = arg;
    atomic_store(&j->released_status, status);
}

/* The job holds the lock here: it "prints" and releases, which lets the next one in. */
static void job_acquired(dlock_lock *l, int status, void *arg) {
    job *j = arg;
    atomic_store(&j->acquired_status, status);
    if (status != DLOCK_OK)
        return;
    int turn = atomic_fetch_add(&turns, 1) + 1;
    atomic_store(&j->turn, turn);
    printf("   job %" PRIu64 " prints (turn %d)\n", j->owner, turn);
    int rc = dlock_lock_release_async(l, j->owner, job_released, j);
    if (rc != DLOCK_OK)
        atomic_store(&j->released_status, rc);
}

static bool submit_job(dlock_lock *lock, job *j, uint64_t owner) {
    j->owner = owner;
    atomic_store(&j->acquired_status, 1);
    atomic_store(&j->released_status, 1);
    atomic_store(&j->turn, 0);
    /* wait until obtained; a 30 s lease in case the job's process dies while printing */
    return expect(dlock_lock_acquire_async(lock, owner, DLOCK_FOREVER, 30000, job_acquired, j),
                  DLOCK_OK, "dlock_lock_acquire_async");
}

/* Waits (up to 5 s) until every job has released. */
static bool wait_jobs(job *jobs, int n) {
    for (int waited = 0; waited < 5000; waited += 5) {
        int done = 0;
        for (int i = 0; i < n; i++)
            done += atomic_load(&jobs[i].released_status) != 1;
        if (done == n)
            return true;
        sleep_ms(5);
    }
    return check(false, "every job ran within 5 s");
}

static bool jobs_ran_in_order(job *jobs, int n) {
    for (int i = 0; i < n; i++) {
        if (!expect(atomic_load(&jobs[i].acquired_status), DLOCK_OK, "job's acquire") ||
            !expect(atomic_load(&jobs[i].released_status), DLOCK_OK, "job's release"))
            return false;
        if (atomic_load(&jobs[i].turn) != i + 1) {
            fprintf(stderr, "FAILED: job %" PRIu64 " ran %d-th, expected %d-th\n", jobs[i].owner,
                    atomic_load(&jobs[i].turn), i + 1);
            return false;
        }
    }
    return true;
}

/* ---- the tour ----------------------------------------------------------------------------- */

int main(void) {
    int status = 1;
    dlock_client *client = NULL;
    dlock_lock *lock = NULL;
    int64_t holds = 0;

    /* 1. A client: url NULL means $DLOCK_URL, else redis://127.0.0.1:6379. */
    dlock_options opts;
    dlock_options_init(&opts);
    opts.fair_wait_ms = FAIR_WAIT_MS;
    int rc = dlock_client_new(&opts, &client);
    if (!expect(rc, DLOCK_OK, "dlock_client_new"))
        return 1;
    printf("1. client %s, fair_wait_ms %d\n", dlock_client_id(client), FAIR_WAIT_MS);
    /* A handle is only a name: no I/O until it is used. */
    if (!expect(dlock_fairlock_new(client, "example:print-queue", &lock), DLOCK_OK,
                "dlock_fairlock_new"))
        goto out;
    printf("   fair lock \"%s\"\n", dlock_lock_name(lock));

    /* 2. Every call of the reentrant lock works on a fair lock: holds are counted per owner
     * (here this thread), leases and the watchdog work the same. */
    if (!expect(dlock_lock_acquire(lock, DLOCK_WATCHDOG), DLOCK_OK, "acquire") ||
        !expect(dlock_lock_try_acquire(lock, 0, DLOCK_WATCHDOG), DLOCK_OK, "reentrant acquire") ||
        !expect(dlock_lock_hold_count(lock, &holds), DLOCK_OK, "hold_count") ||
        !check(holds == 2, "hold count is 2"))
        goto out;
    contender other = {.lock = lock};
    pthread_t thread;
    if (!check(pthread_create(&thread, NULL, contend, &other) == 0, "pthread_create"))
        goto out;
    pthread_join(thread, NULL);
    if (!expect(other.try_rc, DLOCK_ETIMEDOUT, "other thread's try_acquire") ||
        !expect(other.release_rc, DLOCK_ENOTOWNER, "other thread's release"))
        goto out;
    printf("2. held twice (reentrant); another thread: try_acquire(200 ms) -> %s, "
           "release -> %s\n",
           dlock_err_name(other.try_rc), dlock_err_name(other.release_rc));

    /* 3. Five jobs ask in turn while we hold it. They wait in line in Redis, each listening
     * on a channel of its own: a release wakes the first in line and nobody else. */
    job jobs[JOBS];
    atomic_store(&turns, 0);
    for (int i = 0; i < JOBS; i++)
        if (!submit_job(lock, &jobs[i], (uint64_t)i + 1))
            goto out;
    sleep_ms(300);
    if (!check(atomic_load(&turns) == 0, "no job runs while the lock is held") ||
        !expect(dlock_lock_release(lock), DLOCK_OK, "release 1 of 2"))
        goto out;
    sleep_ms(100);
    if (!check(atomic_load(&turns) == 0, "no job runs while a hold is left"))
        goto out;
    printf("3. five jobs wait in line; the holder's last release lets them in:\n");
    if (!expect(dlock_lock_release(lock), DLOCK_OK, "release 2 of 2") || !wait_jobs(jobs, JOBS) ||
        !jobs_ran_in_order(jobs, JOBS))
        goto out;

    /* 4. A waiter keeps its place by refreshing its deadline in Redis (server clock +
     * fair_wait_ms) every third of fair_wait_ms, however long the holder takes. A waiter
     * whose process died stops refreshing and is dropped fair_wait_ms later, so it cannot
     * stall the line. */
    job patient[2];
    atomic_store(&turns, 0);
    if (!expect(dlock_lock_acquire(lock, DLOCK_WATCHDOG), DLOCK_OK, "acquire") ||
        !submit_job(lock, &patient[0], 10))
        goto out;
    sleep_ms(FAIR_WAIT_MS * 5 / 2); /* longer than a silent waiter would keep its place */
    if (!submit_job(lock, &patient[1], 11))
        goto out;
    sleep_ms(100);
    if (!expect(dlock_lock_release(lock), DLOCK_OK, "release") || !wait_jobs(patient, 2) ||
        !jobs_ran_in_order(patient, 2))
        goto out;
    printf("4. job 10 waited %d ms and kept its place ahead of job 11\n", FAIR_WAIT_MS * 5 / 2);

    status = 0;
    printf("OK\n");
out:
    /* Handles before the client. Freeing a handle does no I/O: a hold still in place
     * would expire by its lease; a job still waiting is called back with DLOCK_ECANCELED. */
    dlock_lock_free(lock);
    rc = dlock_client_free(client);
    if (rc != DLOCK_OK) {
        fprintf(stderr, "dlock_client_free: %s (%s)\n", dlock_err_name(rc), dlock_last_error());
        status = 1;
    }
    return status;
}
