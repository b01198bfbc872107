/* SPDX-License-Identifier: MIT */
/* permits.c — leases that outlive a crashed worker: the permit-expirable semaphore
 * (Redisson RPermitExpirableSemaphore).
 *
 * A render farm has 2 GPU slots, kept as the permits of "example:render-slots". Every
 * permit a worker takes has an id and a lease: if the worker dies, its slot comes back to
 * the pool when the lease ends, measured by the Redis server's clock. A worker whose job
 * runs longer than its lease extends the lease as it goes (update_lease), like a
 * heartbeat.
 *
 * Reads the server from $DLOCK_URL (scripts/run-demo.sh starts a private redis-server and
 * sets it; ctest runs this program that way). Every step checks its result and the
 * program exits 0 only if each call answered as this comment says:
 *
 *   1. the pool is created with 2 permits (try_set_permits)
 *   2. a worker on client A takes a permit with a 500 ms lease and "crashes": its client
 *      is freed without releasing anything
 *   3. a long job on client B takes the other permit with a 500 ms lease and keeps
 *      extending it (update_lease every 200 ms) while it runs for 1.5 s
 *   4. a third job, on client B, waits for a permit: it gets the crashed worker's, about
 *      500 ms after that was taken, while the long job still holds its own
 *   5. the crashed worker's id is worth nothing now: release and update_lease say
 *      DLOCK_ENOTOWNER
 *   6. the long job releases its permit by id (a second release is DLOCK_ENOTOWNER); the
 *      third job releases its own: both permits are available again
 *
 * Build: it is example_permits in <build>/examples (cmake); run it with
 *   scripts/run-demo.sh build/examples/example_permits */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "dlock.h"

#define POOL_NAME "example:render-slots"
enum {
    SLOTS = 2,
    LEASE_MS = 500,     /* every permit here is taken with this lease */
    HEARTBEAT_MS = 200, /* the long job extends its lease this often ... */
    LONG_JOB_MS = 1500  /* ... for this long */
};

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

/* ---- step 3: the long job ----------------------------------------------------------------- */

typedef struct long_job {
    dlock_permits *pool;
    dlock_permit_id id;
    int heartbeats;       /* update_lease calls that succeeded */
    atomic_bool finished; /* set just before it releases its permit */
    int release_rc, second_release_rc;
    bool ok;
} long_job;

static void *run_long_job(void *arg) {
    long_job *job = arg;
    int64_t end = now_ms() + LONG_JOB_MS;
    while (now_ms() < end) {
        sleep_ms(HEARTBEAT_MS); /* ... a slice of the work ... */
        /* Still alive: the permit is ours for another LEASE_MS from now (server time). If
         * this ever said DLOCK_ENOTOWNER the lease had run out and the slot may be someone
         * else's: a real job would stop here. */
        if (!expect(dlock_permits_update_lease(job->pool, &job->id, LEASE_MS), DLOCK_OK,
                    "long job: update_lease"))
            return NULL;
        job->heartbeats++;
    }
    atomic_store(&job->finished, true);
    /* Done: give the permit back by its id. Twice is an error: the id is spent. */
    job->release_rc = dlock_permits_release(job->pool, &job->id);
    if (!expect(job->release_rc, DLOCK_OK, "long job: release"))
        return NULL;
    job->second_release_rc = dlock_permits_release(job->pool, &job->id);
    if (!expect(job->second_release_rc, DLOCK_ENOTOWNER, "long job: second release"))
        return NULL;
    job->ok = true;
    return NULL;
}

/* ---- the program -------------------------------------------------------------------------- */

int main(void) {
    int status = 1, rc;
    dlock_client *client_a = NULL, *client_b = NULL;
    dlock_permits *pool_a = NULL, *pool_b = NULL;
    bool was_set = false, long_job_started = false;
    int64_t available = 0;
    pthread_t long_thread;
    long_job job = {0};

    /* Two clients stand for two worker processes; url NULL: $DLOCK_URL, else
     * redis://127.0.0.1:6379. A handle is only a name: no I/O until it is used. */
    if (!expect(dlock_client_new(NULL, &client_a), DLOCK_OK, "dlock_client_new A") ||
        !expect(dlock_client_new(NULL, &client_b), DLOCK_OK, "dlock_client_new B") ||
        !expect(dlock_permits_new(client_a, POOL_NAME, &pool_a), DLOCK_OK, "dlock_permits_new") ||
        !expect(dlock_permits_new(client_b, POOL_NAME, &pool_b), DLOCK_OK, "dlock_permits_new"))
        goto out;

    /* 1. The pool: set only if it does not exist yet. */
    if (!expect(dlock_permits_try_set_permits(pool_b, SLOTS, &was_set), DLOCK_OK,
                "try_set_permits"))
        goto out;
    if (!was_set) {
        /* Left by an earlier run: every permit here has a lease, so once those end (and
         * available() gives them back) the pool must be whole. */
        sleep_ms(LEASE_MS);
        if (!expect(dlock_permits_available(pool_b, &available), DLOCK_OK, "available") ||
            !check(available == SLOTS, "an existing " POOL_NAME " has both permits free (delete "
                                       "its keys if an earlier run was interrupted)"))
            goto out;
    }
    printf("1. pool \"%s\" %s with %d permits\n", POOL_NAME, was_set ? "created" : "found", SLOTS);

    /* 2. A worker on client A takes a permit with a 500 ms lease ... */
    dlock_permit_id crashed_id;
    int64_t crashed_taken_at = now_ms();
    if (!expect(dlock_permits_acquire(pool_a, 0, LEASE_MS, &crashed_id), DLOCK_OK,
                "A: acquire (wait 0, lease 500 ms)"))
        goto out;
    printf("2. worker on A: permit %s, lease %d ms\n", crashed_id.hex, LEASE_MS);
    /* ... and dies before releasing it. Freeing its client without a release is what a
     * crash leaves behind in Redis: a permit nobody will give back. */
    dlock_permits_free(pool_a);
    pool_a = NULL;
    rc = dlock_client_free(client_a);
    client_a = NULL;
    if (!expect(rc, DLOCK_OK, "dlock_client_free A"))
        goto out;
    printf("   worker on A crashed without releasing it\n");

    /* 3. A long job on B takes the other permit, also with a 500 ms lease, and extends
     * the lease every 200 ms while it works. */
    job.pool = pool_b;
    if (!expect(dlock_permits_acquire(pool_b, 0, LEASE_MS, &job.id), DLOCK_OK,
                "long job: acquire (wait 0, lease 500 ms)") ||
        !expect(dlock_permits_available(pool_b, &available), DLOCK_OK, "available") ||
        !check(available == 0, "both permits taken"))
        goto out;
    if (!check(pthread_create(&long_thread, NULL, run_long_job, &job) == 0, "pthread_create"))
        goto out;
    long_job_started = true;
    printf("3. long job on B: permit %s, lease %d ms, extended every %d ms; available %" PRId64
           "\n",
           job.id.hex, LEASE_MS, HEARTBEAT_MS, available);

    /* 4. A third job on B waits up to 3 s for a permit. None is free; the wait ends when
     * the earliest lease does (the waiter is told when that is), so it gets the crashed
     * worker's slot, not the long job's, which keeps being extended. */
    dlock_permit_id third_id;
    int64_t start = now_ms();
    if (!expect(dlock_permits_acquire(pool_b, 3000, 2000, &third_id), DLOCK_OK,
                "third job: acquire (wait 3 s, lease 2 s)"))
        goto out;
    int64_t got_at = now_ms();
    bool long_job_running = !atomic_load(&job.finished);
    if (!check(long_job_running, "the third job's permit came back from the crashed worker") ||
        !check(got_at - crashed_taken_at >= LEASE_MS - 100, "not before the crashed lease ended"))
        goto out;
    printf("4. third job on B: got permit %s after waiting %" PRId64 " ms\n", third_id.hex,
           got_at - start);
    printf("   %" PRId64 " ms after the crashed worker took its own: that lease ended, while "
           "the long job still holds the other\n",
           got_at - crashed_taken_at);

    /* 5. The crashed worker's id is spent: its lease ended and the permit went back. */
    rc = dlock_permits_release(pool_b, &crashed_id);
    if (!expect(rc, DLOCK_ENOTOWNER, "release of the crashed worker's id"))
        goto out;
    int lease_rc = dlock_permits_update_lease(pool_b, &crashed_id, 1000);
    if (!expect(lease_rc, DLOCK_ENOTOWNER, "update_lease of the crashed worker's id"))
        goto out;
    printf("5. crashed worker's id: release -> %s, update_lease -> %s\n", dlock_err_name(rc),
           dlock_err_name(lease_rc));

    /* 6. The long job ends by itself and releases by id. */
    pthread_join(long_thread, NULL);
    long_job_started = false;
    if (!check(job.ok, "the long job ran to its end"))
        goto out;
    printf("6. long job: %d lease extensions over %d ms; release -> %s, again -> %s\n",
           job.heartbeats, LONG_JOB_MS, dlock_err_name(job.release_rc),
           dlock_err_name(job.second_release_rc));
    if (!expect(dlock_permits_release(pool_b, &third_id), DLOCK_OK, "third job: release") ||
        !expect(dlock_permits_available(pool_b, &available), DLOCK_OK, "available") ||
        !check(available == SLOTS, "both permits free at the end"))
        goto out;
    printf("   third job released its permit; available %" PRId64 "\n", available);

    status = 0;
    printf("OK\n");
out:
    if (long_job_started)
        pthread_join(long_thread, NULL);
    /* Handles before their client. Freeing does no I/O: a permit still held would come
     * back when its lease ends. */
    dlock_permits_free(pool_a);
    dlock_permits_free(pool_b);
    dlock_client *clients[] = {client_a, client_b};
    for (int i = 0; i < 2; i++) {
        rc = dlock_client_free(clients[i]);
        if (rc != DLOCK_OK) {
            fprintf(stderr, "dlock_client_free: %s (%s)\n", dlock_err_name(rc), dlock_last_error());
            status = 1;
        }
    }
    return status;
}
