/* SPDX-License-Identifier: MIT */
/* lock.c — a tour of the lock API: the reentrant lock (Redisson RLock) and the fenced lock
 * (RFencedLock).
 *
 * Reads the server from $DLOCK_URL (scripts/run-demo.sh starts a private redis-server and
 * sets it; ctest runs this program that way). Every step checks its result and the
 * program exits 0 only if each call answered as this comment says:
 *
 *   1. a client and a lock; a lost-lease callback set before the first acquire
 *   2. acquire with the watchdog; acquire again (reentrant): hold count 2
 *   3. another thread: try_acquire gives up (DLOCK_ETIMEDOUT), its release is refused
 *      (DLOCK_ENOTOWNER)
 *   4. the watchdog keeps the lock past its lease; two releases free it
 *   5. the lock is deleted behind the holder's back: the lost callback fires (DLOCK_ELOST)
 *      and the next release says DLOCK_ELOST
 *   6. a fenced lock: a holder that sleeps past its lease writes with a stale token, and
 *      the storage refuses the write
 *
 * Build: it is example_lock in <build>/examples (cmake); run it with
 *   scripts/run-demo.sh build/examples/example_lock */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "dlock.h"

/* The watchdog lease. The default is 30 s (renewed every 10 s); 1.5 s lets step 4 show a
 * renewal without making the example slow. */
#define WATCHDOG_MS 1500

/* ---- small helpers ------------------------------------------------------------------------ */

static void sleep_ms(int64_t ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
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

/* ---- the lost-lease callback -------------------------------------------------------------- */

/* Runs on the client's I/O thread, once per lost lease: it must be quick and must not make
 * blocking dlock calls. A real program would stop the work the lock protects, e.g. by
 * setting a flag the worker checks before each write. */
static atomic_int lost_calls;
static atomic_int lost_reason;

static void on_lost(dlock_lock *l, uint64_t owner, int reason, void *arg) {
    (void)l;
    (void)owner;
    (void)arg;
    atomic_store(&lost_reason, reason);
    atomic_fetch_add(&lost_calls, 1);
}

/* ---- step 3: another thread contends ------------------------------------------------------- */

typedef struct contender {
    dlock_lock *lock;
    int try_rc;     /* try_acquire(wait 200 ms) */
    int release_rc; /* release of a lock this thread does not hold */
    bool held;      /* is_held as this thread sees it */
    int held_rc;
} contender;

static void *contend(void *arg) {
    contender *c = arg;
    /* This thread is another owner: the main thread's holds do not count for it. */
    c->try_rc = dlock_lock_try_acquire(c->lock, 200, DLOCK_WATCHDOG);
    c->held_rc = dlock_lock_is_held(c->lock, &c->held);
    c->release_rc = dlock_lock_release(c->lock);
    return NULL;
}

/* ---- step 6: the fenced lock and a resource that checks tokens ----------------------------- */

/* The protected resource: a record in some storage that is not Redis (a database row, a
 * file on a shared volume). It remembers the highest fencing token it has accepted and
 * refuses a write that carries a lower one: that writer's lease ran out and someone else
 * has held the lock since. In a database the check and the write are one statement, e.g.
 *   UPDATE report SET body = ?, token = ? WHERE id = ? AND token <= ?            */
static struct {
    pthread_mutex_t mu;
    uint64_t highest_token;
    char body[64];
} storage = {.mu = PTHREAD_MUTEX_INITIALIZER};

static bool storage_write(uint64_t token, const char *body) {
    pthread_mutex_lock(&storage.mu);
    bool accepted = token >= storage.highest_token;
    if (accepted) {
        storage.highest_token = token;
        snprintf(storage.body, sizeof(storage.body), "%s", body);
    }
    pthread_mutex_unlock(&storage.mu);
    printf("   storage: write \"%s\" with token %" PRIu64 ": %s\n", body, token,
           accepted ? "accepted" : "REFUSED (a newer holder wrote since)");
    return accepted;
}

typedef struct writer {
    dlock_lock *lock;
    int acquire_rc, token_rc, release_rc;
    uint64_t token;
    bool written;
} writer;

/* The second holder: waits for the lock (it gets in when the first holder's lease runs
 * out), writes with its token, releases. */
static void *second_writer(void *arg) {
    writer *w = arg;
    w->acquire_rc = dlock_lock_try_acquire(w->lock, 5000, DLOCK_WATCHDOG);
    if (w->acquire_rc != DLOCK_OK)
        return NULL;
    w->token_rc = dlock_lock_token(w->lock, &w->token);
    if (w->token_rc == DLOCK_OK)
        w->written = storage_write(w->token, "report v2 (second holder)");
    w->release_rc = dlock_lock_release(w->lock);
    return NULL;
}

/* ---- the tour ----------------------------------------------------------------------------- */

int main(void) {
    int status = 1;
    dlock_client *client = NULL;
    dlock_lock *lock = NULL, *fenced = NULL;
    int64_t holds = 0, ttl = 0;
    bool flag = false;

    /* 1. A client: one connection set to one Redis, shared by all its locks. url NULL means
     * $DLOCK_URL, else redis://127.0.0.1:6379. */
    dlock_options opts;
    dlock_options_init(&opts);
    opts.watchdog_ms = WATCHDOG_MS;
    int rc = dlock_client_new(&opts, &client);
    if (!expect(rc, DLOCK_OK, "dlock_client_new"))
        return 1;
    printf("1. client %s\n", dlock_client_id(client));

    /* A lock handle is only a name: no I/O until it is used. The lost callback goes on
     * before the first acquire. */
    if (!expect(dlock_lock_new(client, "example:nightly-report", &lock), DLOCK_OK,
                "dlock_lock_new") ||
        !expect(dlock_lock_on_lost(lock, on_lost, NULL), DLOCK_OK, "dlock_lock_on_lost"))
        goto out;
    printf("   lock \"%s\"\n", dlock_lock_name(lock));

    /* 2. Acquire. DLOCK_WATCHDOG: hold until released; the client renews the lease. */
    if (!expect(dlock_lock_acquire(lock, DLOCK_WATCHDOG), DLOCK_OK, "acquire"))
        goto out;
    /* Reentrant: the same owner (this thread) may acquire again, and must release as
     * often. try_acquire with wait 0 is a single attempt. */
    if (!expect(dlock_lock_try_acquire(lock, 0, DLOCK_WATCHDOG), DLOCK_OK, "reentrant acquire") ||
        !expect(dlock_lock_hold_count(lock, &holds), DLOCK_OK, "hold_count") ||
        !check(holds == 2, "hold count is 2") ||
        !expect(dlock_lock_is_held(lock, &flag), DLOCK_OK, "is_held") ||
        !check(flag, "held by this thread"))
        goto out;
    printf("2. acquired twice (reentrant): hold count %" PRId64 "\n", holds);

    /* 3. Another thread is another owner. */
    contender other = {.lock = lock};
    pthread_t thread;
    if (!check(pthread_create(&thread, NULL, contend, &other) == 0, "pthread_create"))
        goto out;
    pthread_join(thread, NULL);
    if (!expect(other.try_rc, DLOCK_ETIMEDOUT, "other thread's try_acquire") ||
        !expect(other.held_rc, DLOCK_OK, "other thread's is_held") ||
        !check(!other.held, "not held by the other thread") ||
        !expect(other.release_rc, DLOCK_ENOTOWNER, "other thread's release"))
        goto out;
    printf("3. another thread: try_acquire(wait 200 ms) -> %s, release -> %s\n",
           dlock_err_name(other.try_rc), dlock_err_name(other.release_rc));

    /* 4. The watchdog renews the lease every WATCHDOG_MS / 3: after sleeping longer than
     * the lease the lock is still ours. */
    sleep_ms(WATCHDOG_MS + 500);
    if (!expect(dlock_lock_ttl(lock, &ttl), DLOCK_OK, "ttl") ||
        !check(ttl > 0 && ttl <= WATCHDOG_MS, "ttl within the renewed lease") ||
        !expect(dlock_lock_hold_count(lock, &holds), DLOCK_OK, "hold_count") ||
        !check(holds == 2, "still 2 holds after the lease time"))
        goto out;
    printf("4. %d ms later, still held; lease left %" PRId64 " ms (renewed by the watchdog)\n",
           WATCHDOG_MS + 500, ttl);

    /* Two holds, two releases; the last one deletes the lock and wakes one waiter of
     * every client. One release too many is DLOCK_ENOTOWNER and changes nothing. */
    if (!expect(dlock_lock_release(lock), DLOCK_OK, "release 1 of 2") ||
        !expect(dlock_lock_release(lock), DLOCK_OK, "release 2 of 2") ||
        !expect(dlock_lock_release(lock), DLOCK_ENOTOWNER, "release of nothing") ||
        !expect(dlock_lock_is_locked(lock, &flag), DLOCK_OK, "is_locked") ||
        !check(!flag, "unlocked") || !expect(dlock_lock_ttl(lock, &ttl), DLOCK_OK, "ttl") ||
        !check(ttl == -2, "ttl -2 (no such lock)"))
        goto out;
    printf("   released twice: unlocked (ttl %" PRId64 "); a third release -> DLOCK_ENOTOWNER\n",
           ttl);

    /* 5. The lease is lost while held. Here the lock is deleted by force_release (what an
     * operator's `dlock unlock` or a Redis restart without persistence would do); the
     * watchdog's next renewal finds it gone and the callback runs. */
    if (!expect(dlock_lock_acquire(lock, DLOCK_WATCHDOG), DLOCK_OK, "acquire") ||
        !expect(dlock_lock_force_release(lock, &flag), DLOCK_OK, "force_release") ||
        !check(flag, "force_release found it locked"))
        goto out;
    for (int waited = 0; atomic_load(&lost_calls) == 0 && waited < 5 * WATCHDOG_MS; waited += 10)
        sleep_ms(10);
    if (!check(atomic_load(&lost_calls) == 1, "the lost callback ran once") ||
        !expect(atomic_load(&lost_reason), DLOCK_ELOST, "the lost reason"))
        goto out;
    /* The holder learns it too: its next release says the hold was lost (and forgets it). */
    if (!expect(dlock_lock_release(lock), DLOCK_ELOST, "release of a lost hold"))
        goto out;
    printf("5. lock deleted behind our back: lost callback (%s); release -> DLOCK_ELOST\n",
           dlock_err_name(atomic_load(&lost_reason)));

    /* 6. A fenced lock: every acquisition takes the next token from a counter in Redis.
     * This thread takes it with a fixed 300 ms lease (nobody renews it), then "pauses" for
     * 800 ms: a GC pause, a stalled disk, a partition. Meanwhile the lease runs out and a
     * second holder gets in with a higher token and writes. When the first holder wakes
     * up, the storage refuses its stale token. */
    if (!expect(dlock_fencedlock_new(client, "example:report-row", &fenced), DLOCK_OK,
                "dlock_fencedlock_new") ||
        !expect(dlock_lock_acquire(fenced, 300), DLOCK_OK, "fenced acquire"))
        goto out;
    uint64_t my_token = 0;
    if (!expect(dlock_lock_token(fenced, &my_token), DLOCK_OK, "token"))
        goto out;
    printf("6. fenced lock \"%s\": acquired with token %" PRIu64 " and a 300 ms lease\n",
           dlock_lock_name(fenced), my_token);
    if (!check(storage_write(my_token, "report v1 (first holder)"), "first write accepted"))
        goto out;

    writer second = {.lock = fenced};
    if (!check(pthread_create(&thread, NULL, second_writer, &second) == 0, "pthread_create"))
        goto out;
    sleep_ms(800); /* the pause */
    pthread_join(thread, NULL);
    if (!expect(second.acquire_rc, DLOCK_OK, "second holder's acquire") ||
        !expect(second.token_rc, DLOCK_OK, "second holder's token") ||
        !check(second.token > my_token, "the second holder's token is higher") ||
        !check(second.written, "second holder's write accepted") ||
        !expect(second.release_rc, DLOCK_OK, "second holder's release"))
        goto out;

    /* The first holder wakes up and, not knowing, writes again: refused. */
    if (!check(!storage_write(my_token, "report v1, late"), "the stale write is refused"))
        goto out;
    /* Its release confirms the lease ran out. */
    if (!expect(dlock_lock_release(fenced), DLOCK_ELOST, "release after the lease ran out"))
        goto out;
    printf("   first holder's release -> DLOCK_ELOST; storage holds \"%s\" (token %" PRIu64 ")\n",
           storage.body, storage.highest_token);

    status = 0;
    printf("OK\n");
out:
    /* Handles before the client. Freeing a handle does no I/O: a hold still in place
     * would expire by its lease. */
    dlock_lock_free(fenced);
    dlock_lock_free(lock);
    rc = dlock_client_free(client);
    if (rc != DLOCK_OK) {
        fprintf(stderr, "dlock_client_free: %s (%s)\n", dlock_err_name(rc), dlock_last_error());
        status = 1;
    }
    return status;
}
