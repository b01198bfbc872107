/* SPDX-License-Identifier: MIT */
/* spinlock.c — a tour of the spin lock (Redisson RSpinLock): a reentrant lock that uses no
 * pub/sub. A waiter does not listen for a release; it tries again after a backoff that
 * doubles from 1 ms to 128 ms.
 *
 * Reads the server from $DLOCK_URL (scripts/run-demo.sh starts a private redis-server and
 * sets it; ctest runs this program that way). Every step checks its result and the
 * program exits 0 only if each call answered as this comment says:
 *
 *   1. a client and a spin lock
 *   2. acquire, acquire again (reentrant): hold count 2; another thread's try_acquire gives
 *      up after 200 ms (DLOCK_ETIMEDOUT) and its release is refused (DLOCK_ENOTOWNER)
 *   3. a waiting thread gets the lock after the holder's release, at its next attempt:
 *      at most one backoff step (128 ms) later, with no message sent
 *   4. four threads add 1 to a plain counter 50 times each, each addition under the lock:
 *      the counter ends at 200
 *
 * Build: it is example_spinlock in <build>/examples (cmake); run it with
 *   scripts/run-demo.sh build/examples/example_spinlock */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "dlock.h"

#define WORKERS 4
#define ADDS 50

/* ---- small helpers ------------------------------------------------------------------------ */

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

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

/* ---- steps 2 and 3: another thread --------------------------------------------------------- */

typedef struct other_thread {
    dlock_lock *lock;
    int64_t wait_ms;
    int acquire_rc, release_rc;
    int64_t acquired_ms;
} other_thread;

/* Another owner: it tries for wait_ms, then releases (refused if it got nothing). */
static void *try_then_release(void *arg) {
    other_thread *o = arg;
    o->acquire_rc = dlock_lock_try_acquire(o->lock, o->wait_ms, DLOCK_WATCHDOG);
    o->acquired_ms = now_ms();
    o->release_rc = dlock_lock_release(o->lock);
    return NULL;
}

/* ---- step 4: a plain counter kept consistent by the lock ---------------------------------- */

typedef struct counter {
    dlock_lock *lock;
    volatile long value; /* not atomic: only the lock keeps the additions apart */
    int errors;          /* failed calls, counted under the lock */
} counter;

static void *add_under_lock(void *arg) {
    counter *k = arg;
    for (int i = 0; i < ADDS; i++) {
        if (dlock_lock_acquire(k->lock, 10000) != DLOCK_OK) {
            __atomic_fetch_add(&k->errors, 1, __ATOMIC_RELAXED);
            continue;
        }
        long v = k->value;
        k->value = v + 1;
        if (dlock_lock_release(k->lock) != DLOCK_OK)
            __atomic_fetch_add(&k->errors, 1, __ATOMIC_RELAXED);
    }
    return NULL;
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
    if (!expect(dlock_client_new(&opts, &client), DLOCK_OK, "dlock_client_new"))
        return 1;
    /* A handle is only a name: no I/O until it is used. */
    if (!expect(dlock_spinlock_new(client, "example:spin", &lock), DLOCK_OK, "dlock_spinlock_new"))
        goto out;
    printf("1. client %s, spin lock \"%s\"\n", dlock_client_id(client), dlock_lock_name(lock));

    /* 2. Every call of the reentrant lock works on a spin lock: holds are counted per owner
     * (here this thread), leases and the watchdog work the same. */
    if (!expect(dlock_lock_acquire(lock, DLOCK_WATCHDOG), DLOCK_OK, "acquire") ||
        !expect(dlock_lock_try_acquire(lock, 0, DLOCK_WATCHDOG), DLOCK_OK, "reentrant acquire") ||
        !expect(dlock_lock_hold_count(lock, &holds), DLOCK_OK, "hold_count") ||
        !check(holds == 2, "hold count is 2"))
        goto out;
    other_thread other = {.lock = lock, .wait_ms = 200};
    pthread_t thread;
    if (!check(pthread_create(&thread, NULL, try_then_release, &other) == 0, "pthread_create"))
        goto out;
    pthread_join(thread, NULL);
    if (!expect(other.acquire_rc, DLOCK_ETIMEDOUT, "other thread's try_acquire") ||
        !expect(other.release_rc, DLOCK_ENOTOWNER, "other thread's release"))
        goto out;
    printf("2. held twice (reentrant); another thread: try_acquire(200 ms) -> %s, "
           "release -> %s\n",
           dlock_err_name(other.acquire_rc), dlock_err_name(other.release_rc));

    /* 3. A waiter backs off (1, 2, 4, ... 128 ms between attempts) while we hold the lock.
     * Our release publishes nothing: the waiter sees it at its next attempt. */
    other = (other_thread){.lock = lock, .wait_ms = 10000};
    if (!check(pthread_create(&thread, NULL, try_then_release, &other) == 0, "pthread_create"))
        goto out;
    sleep_ms(400); /* the waiter is at its 128 ms steps by now */
    if (!expect(dlock_lock_release(lock), DLOCK_OK, "release 1 of 2") ||
        !expect(dlock_lock_release(lock), DLOCK_OK, "release 2 of 2")) {
        pthread_join(thread, NULL);
        goto out;
    }
    int64_t released_ms = now_ms();
    pthread_join(thread, NULL);
    if (!expect(other.acquire_rc, DLOCK_OK, "waiter's acquire") ||
        !expect(other.release_rc, DLOCK_OK, "waiter's release"))
        goto out;
    printf("3. the waiter had it %lld ms after our release (its next attempt)\n",
           (long long)(other.acquired_ms - released_ms));

    /* 4. Mutual exclusion: four threads, one counter, no atomics but the lock. */
    counter k = {.lock = lock};
    pthread_t workers[WORKERS];
    int started = 0;
    while (started < WORKERS && pthread_create(&workers[started], NULL, add_under_lock, &k) == 0)
        started++;
    for (int i = 0; i < started; i++)
        pthread_join(workers[i], NULL);
    if (!check(started == WORKERS, "every worker started") ||
        !check(k.errors == 0, "every acquire and release succeeded") ||
        !check(k.value == WORKERS * ADDS, "the counter is exact"))
        goto out;
    printf("4. %d threads x %d additions under the lock: counter %ld\n", WORKERS, ADDS, k.value);

    status = 0;
    printf("OK\n");
out:
    /* Handles before the client. Freeing a handle does no I/O. */
    dlock_lock_free(lock);
    int rc = dlock_client_free(client);
    if (rc != DLOCK_OK) {
        fprintf(stderr, "dlock_client_free: %s (%s)\n", dlock_err_name(rc), dlock_last_error());
        status = 1;
    }
    return status;
}
