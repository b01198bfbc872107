/* SPDX-License-Identifier: MIT */
/* rwlock.c — a tour of the read-write lock (Redisson RReadWriteLock): many readers or one
 * writer, across threads, processes and machines.
 *
 * The story: a price table that many workers read and one job rewrites now and then.
 * Reads may overlap; a rewrite must not overlap anything.
 *
 * Reads the server from $DLOCK_URL (scripts/run-demo.sh starts a private redis-server and
 * sets it; ctest runs this program that way). Every step checks its result and the
 * program exits 0 only if each call answered as this comment says:
 *
 *   1. a client and a read-write lock; its two halves are ordinary dlock_lock handles
 *   2. three reader threads read at the same time (all three inside at once)
 *   3. a writer waits for the readers, then writes; readers wait for it (DLOCK_ETIMEDOUT
 *      for a short try); its release lets every waiting reader in
 *   4. downgrade: the writer takes a read hold and releases the write hold: others may
 *      read, nobody may write
 *   5. no upgrade: a reader's write attempt times out (DLOCK_ETIMEDOUT), it never deadlocks
 *   6. writer priority: while a writer waits, new readers wait behind it
 *   7. is_locked of each half, hold counts, DLOCK_ENOTOWNER for a release of nothing
 *
 * Build: it is example_rwlock in <build>/examples (cmake); run it with
 *   scripts/run-demo.sh build/examples/example_rwlock */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "dlock.h"

/* The watchdog lease; the default is 30 s. Short here so a lost hold would show quickly. */
#define WATCHDOG_MS 3000

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

/* ---- the shared price table and its readers ----------------------------------------------- */

/* What the lock protects. In a real system this is not in this process: a file on a shared
 * volume, a row set in a database, an object in a bucket. */
static struct {
    atomic_int version;
    atomic_int readers_inside;
    atomic_int most_readers_inside;
} table;

static void note_reader_inside(void) {
    int now = atomic_fetch_add(&table.readers_inside, 1) + 1;
    int most = atomic_load(&table.most_readers_inside);
    while (now > most && !atomic_compare_exchange_weak(&table.most_readers_inside, &most, now)) {
    }
}

typedef struct reader {
    dlock_lock *read; /* the read half, shared by every thread of this process */
    int64_t wait_ms;  /* how long to wait for the lock */
    int64_t read_ms;  /* how long the "read" takes */
    int acquire_rc, release_rc;
    int version_seen;
} reader;

/* A worker that reads the table: takes a read hold (the watchdog keeps it while it reads),
 * reads, releases. Every thread is its own owner. */
static void *read_table(void *arg) {
    reader *r = arg;
    r->acquire_rc = dlock_lock_try_acquire(r->read, r->wait_ms, DLOCK_WATCHDOG);
    if (r->acquire_rc != DLOCK_OK)
        return NULL;
    note_reader_inside();
    r->version_seen = atomic_load(&table.version);
    sleep_ms(r->read_ms);
    atomic_fetch_sub(&table.readers_inside, 1);
    r->release_rc = dlock_lock_release(r->read);
    return NULL;
}

typedef struct writer {
    dlock_lock *write;
    int64_t wait_ms;
    int acquire_rc, release_rc;
    int readers_inside_seen; /* must be 0: nobody reads while it writes */
    int64_t waited_ms;
    atomic_bool inside; /* set once it holds the write lock */
    atomic_bool done;   /* set by the tour: it may release now */
} writer;

/* The job that rewrites the table: a write hold excludes every reader and every other
 * writer. */
static void *rewrite_table(void *arg) {
    writer *w = arg;
    int64_t start = now_ms();
    w->acquire_rc = dlock_lock_try_acquire(w->write, w->wait_ms, DLOCK_WATCHDOG);
    w->waited_ms = now_ms() - start;
    if (w->acquire_rc != DLOCK_OK)
        return NULL;
    w->readers_inside_seen = atomic_load(&table.readers_inside);
    atomic_fetch_add(&table.version, 1);
    /* it writes until the tour has shown what a reader meets meanwhile (at most 10 s) */
    atomic_store(&w->inside, true);
    for (int64_t until = now_ms() + 10000; !atomic_load(&w->done) && now_ms() < until;)
        sleep_ms(1);
    w->release_rc = dlock_lock_release(w->write);
    return NULL;
}

static bool start(pthread_t *t, void *(*fn)(void *), void *arg) {
    return check(pthread_create(t, NULL, fn, arg) == 0, "pthread_create");
}

/* ---- the tour ----------------------------------------------------------------------------- */

int main(void) {
    int status = 1;
    dlock_client *client = NULL;
    dlock_rwlock *rw = NULL;
    bool flag = false;
    int64_t holds = 0;

    /* 1. A client (url NULL: $DLOCK_URL, else redis://127.0.0.1:6379) and a read-write
     * lock. Its halves are borrowed dlock_lock handles: every lock call works on each. */
    dlock_options opts;
    dlock_options_init(&opts);
    opts.watchdog_ms = WATCHDOG_MS;
    int rc = dlock_client_new(&opts, &client);
    if (!expect(rc, DLOCK_OK, "dlock_client_new"))
        return 1;
    if (!expect(dlock_rwlock_new(client, "example:price-table", &rw), DLOCK_OK, "dlock_rwlock_new"))
        goto out;
    dlock_lock *rd = dlock_rwlock_read(rw), *wr = dlock_rwlock_write(rw);
    printf("1. client %s, read-write lock \"%s\"\n", dlock_client_id(client), dlock_lock_name(rd));

    /* 2. Three readers at once: readers share. */
    reader readers[3];
    pthread_t threads[3];
    for (int i = 0; i < 3; i++) {
        readers[i] = (reader){.read = rd, .wait_ms = 5000, .read_ms = 300};
        if (!start(&threads[i], read_table, &readers[i]))
            goto out;
    }
    for (int i = 0; i < 3; i++)
        pthread_join(threads[i], NULL);
    for (int i = 0; i < 3; i++)
        if (!expect(readers[i].acquire_rc, DLOCK_OK, "reader's acquire") ||
            !expect(readers[i].release_rc, DLOCK_OK, "reader's release"))
            goto out;
    if (!check(atomic_load(&table.most_readers_inside) == 3, "three readers inside at once"))
        goto out;
    printf("2. three reader threads read together (%d inside at once)\n",
           atomic_load(&table.most_readers_inside));

    /* 3. This thread reads; a writer thread waits for it. While the writer writes, a
     * reader that only tries for 200 ms gives up. The write release wakes every waiting
     * reader at once. */
    if (!expect(dlock_lock_acquire(rd, DLOCK_WATCHDOG), DLOCK_OK, "read acquire"))
        goto out;
    note_reader_inside();
    writer job = {.write = wr, .wait_ms = 10000};
    atomic_init(&job.inside, false);
    atomic_init(&job.done, false);
    pthread_t job_thread;
    if (!start(&job_thread, rewrite_table, &job))
        goto out;
    sleep_ms(300); /* the writer is waiting now */
    atomic_fetch_sub(&table.readers_inside, 1);
    if (!expect(dlock_lock_release(rd), DLOCK_OK, "read release"))
        goto out;
    /* wait until the writer is in (it had 10 s to get there), then try to read beside it */
    for (int64_t until = now_ms() + 11000; !atomic_load(&job.inside) && now_ms() < until;)
        sleep_ms(1);
    reader impatient = {.read = rd, .wait_ms = 0, .read_ms = 0};
    if (!start(&threads[0], read_table, &impatient))
        goto out;
    pthread_join(threads[0], NULL);
    atomic_store(&job.done, true);
    pthread_join(job_thread, NULL);
    if (!expect(job.acquire_rc, DLOCK_OK, "writer's acquire") ||
        !check(job.readers_inside_seen == 0, "nobody read while the writer wrote") ||
        !expect(job.release_rc, DLOCK_OK, "writer's release") ||
        !expect(impatient.acquire_rc, DLOCK_ETIMEDOUT, "a reader's try while the writer wrote"))
        goto out;
    printf("3. the writer waited %" PRId64 " ms for the reader, wrote version %d; a reader's try "
           "meanwhile -> %s\n",
           job.waited_ms, atomic_load(&table.version), dlock_err_name(impatient.acquire_rc));

    /* 4. Downgrade: write, then read while still writing, then let the write go. The lock
     * stays read-locked by this thread: others may read, nobody may write. */
    if (!expect(dlock_lock_acquire(wr, DLOCK_WATCHDOG), DLOCK_OK, "write acquire") ||
        !expect(dlock_lock_try_acquire(rd, 0, DLOCK_WATCHDOG), DLOCK_OK, "the writer reads") ||
        !expect(dlock_lock_release(wr), DLOCK_OK, "write release (downgrade)") ||
        !expect(dlock_lock_is_locked(rd, &flag), DLOCK_OK, "is_locked (read)") ||
        !check(flag, "read-locked after the downgrade"))
        goto out;
    reader other = {.read = rd, .wait_ms = 0, .read_ms = 0};
    writer other_writer = {.write = wr, .wait_ms = 0};
    /* one after the other: a writer's attempt, even a single one, holds new readers back
     * until it gives up (step 6) */
    if (!start(&threads[0], read_table, &other))
        goto out;
    pthread_join(threads[0], NULL);
    if (!start(&threads[1], rewrite_table, &other_writer))
        goto out;
    pthread_join(threads[1], NULL);
    if (!expect(other.acquire_rc, DLOCK_OK, "another reader after the downgrade") ||
        !expect(other_writer.acquire_rc, DLOCK_ETIMEDOUT, "another writer after the downgrade"))
        goto out;
    printf("4. downgrade: another reader -> %s, another writer -> %s\n",
           dlock_err_name(other.acquire_rc), dlock_err_name(other_writer.acquire_rc));

    /* 5. No upgrade: this thread still reads; its own write attempt can only wait, so it
     * gives up at its deadline. Keep such tries short: while it waits, it holds new readers
     * back (step 6). */
    int64_t t0 = now_ms();
    if (!expect(dlock_lock_try_acquire(wr, 300, DLOCK_WATCHDOG), DLOCK_ETIMEDOUT,
                "a reader's write attempt"))
        goto out;
    printf("5. no upgrade: a reader's try_acquire(write, 300 ms) -> DLOCK_ETIMEDOUT after %" PRId64
           " ms\n",
           now_ms() - t0);

    /* 6. Writer priority: this thread still reads; a writer starts waiting; a new reader is
     * held back behind it (a steady stream of readers cannot starve the writer). When this
     * thread releases, the writer gets in first. */
    writer waiting = {.write = wr, .wait_ms = 10000};
    if (!start(&job_thread, rewrite_table, &waiting))
        goto out;
    sleep_ms(300);
    reader late = {.read = rd, .wait_ms = 200, .read_ms = 0};
    if (!start(&threads[0], read_table, &late))
        goto out;
    pthread_join(threads[0], NULL);
    if (!expect(late.acquire_rc, DLOCK_ETIMEDOUT, "a new reader while a writer waits") ||
        !expect(dlock_lock_release(rd), DLOCK_OK, "read release"))
        goto out;
    pthread_join(job_thread, NULL);
    if (!expect(waiting.acquire_rc, DLOCK_OK, "the waiting writer") ||
        !expect(waiting.release_rc, DLOCK_OK, "the waiting writer's release"))
        goto out;
    printf("6. writer priority: a new reader while the writer waited -> %s; the writer got in "
           "after %" PRId64 " ms\n",
           dlock_err_name(late.acquire_rc), waiting.waited_ms);

    /* 7. Each half answers for itself. */
    if (!expect(dlock_lock_acquire(wr, DLOCK_WATCHDOG), DLOCK_OK, "write acquire") ||
        !expect(dlock_lock_acquire(wr, DLOCK_WATCHDOG), DLOCK_OK, "reentrant write acquire") ||
        !expect(dlock_lock_hold_count(wr, &holds), DLOCK_OK, "hold_count (write)") ||
        !check(holds == 2, "two write holds") ||
        !expect(dlock_lock_is_locked(wr, &flag), DLOCK_OK, "is_locked (write)") ||
        !check(flag, "write-locked") ||
        !expect(dlock_lock_is_locked(rd, &flag), DLOCK_OK, "is_locked (read)") ||
        !check(!flag, "not read-locked") ||
        !expect(dlock_lock_release(rd), DLOCK_ENOTOWNER, "read release without a read hold") ||
        !expect(dlock_lock_release(wr), DLOCK_OK, "write release 1 of 2") ||
        !expect(dlock_lock_release(wr), DLOCK_OK, "write release 2 of 2") ||
        !expect(dlock_lock_is_locked(wr, &flag), DLOCK_OK, "is_locked (write)") ||
        !check(!flag, "unlocked"))
        goto out;
    printf("7. two write holds, is_locked write/read = yes/no, a read release -> "
           "DLOCK_ENOTOWNER; released\n");

    status = 0;
    printf("OK\n");
out:
    /* The rwlock before the client; its halves go with it. */
    dlock_rwlock_free(rw);
    rc = dlock_client_free(client);
    if (rc != DLOCK_OK) {
        fprintf(stderr, "dlock_client_free: %s (%s)\n", dlock_err_name(rc), dlock_last_error());
        status = 1;
    }
    return status;
}
