/* SPDX-License-Identifier: MIT */
/* multilock.c — a tour of the MultiLock (Redisson RedissonMultiLock): one lock made of
 * several ordinary locks, taken all together or not at all.
 *
 * The story: money moves between accounts, and a transfer must hold the lock of both
 * accounts it touches. Each account has its own lock; a transfer takes a MultiLock over
 * the two. Here every member is on the one server of $DLOCK_URL; in an application they
 * may as well be on different clients and different Redis servers.
 *
 * Reads the server from $DLOCK_URL (scripts/run-demo.sh starts a private redis-server and
 * sets it; ctest runs this program that way). Every step checks its result and the
 * program exits 0 only if each call answered as this comment says:
 *
 *   1. a client, three account locks, a MultiLock over alice and bob
 *   2. acquire: both members are held by this thread; another thread can take neither
 *   3. all or nothing: with carol's lock held elsewhere, a MultiLock over bob and carol
 *      gives up after its wait (DLOCK_ETIMEDOUT) and leaves bob free
 *   4. two threads move money alice -> bob and bob -> alice at the same time, each giving
 *      the accounts in its own order: no deadlock (the members are taken in one canonical
 *      order), and no transfer is lost
 *   5. with the watchdog, the MultiLock outlives its lease; release frees every member
 *
 * Build: it is example_multilock in <build>/examples (cmake); run it with
 *   scripts/run-demo.sh build/examples/example_multilock */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>

#include "dlock.h"

#define WATCHDOG_MS 1500 /* short, so that step 5 sees a renewal quickly */
#define TRANSFERS 50     /* per thread in step 4 */

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

/* ---- the accounts: in-process balances that the locks protect ------------------------------ */

/* Plain ints on purpose: only the locks keep two transfers from interleaving. */
static int64_t balance_alice = 1000, balance_bob = 1000;

/* ---- step 2: another thread ---------------------------------------------------------------- */

typedef struct outsider {
    dlock_lock *alice, *bob;
    int alice_rc, bob_rc;
} outsider;

static void *outsider_run(void *arg) {
    outsider *o = arg;
    o->alice_rc = dlock_lock_try_acquire(o->alice, 0, 5000);
    o->bob_rc = dlock_lock_try_acquire(o->bob, 0, 5000);
    return NULL;
}

/* ---- step 3: carol's lock is held by another thread ----------------------------------------- */

typedef struct carol_holder {
    dlock_lock *carol;
    int acquire_rc, release_rc;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    bool holding, done;
} carol_holder;

/* Takes carol's lock, says so, keeps it until told, releases it. */
static void *carol_run(void *arg) {
    carol_holder *h = arg;
    h->acquire_rc = dlock_lock_acquire(h->carol, 10000);
    pthread_mutex_lock(&h->mu);
    h->holding = true;
    pthread_cond_broadcast(&h->cond);
    while (!h->done)
        pthread_cond_wait(&h->cond, &h->mu);
    pthread_mutex_unlock(&h->mu);
    if (h->acquire_rc == DLOCK_OK)
        h->release_rc = dlock_lock_release(h->carol);
    return NULL;
}

/* ---- step 4: transfers both ways ------------------------------------------------------------ */

typedef struct transferer {
    dlock_client *client;
    bool alice_to_bob;
    int rc;
    int done;
} transferer;

static void *transfer_run(void *arg) {
    transferer *t = arg;
    /* Each thread has its own handles and its own MultiLock, and names the accounts in the
     * order of its transfer: from, then to. */
    dlock_lock *from = NULL, *to = NULL, *both = NULL;
    const char *from_name = t->alice_to_bob ? "example:account:alice" : "example:account:bob";
    const char *to_name = t->alice_to_bob ? "example:account:bob" : "example:account:alice";
    t->rc = dlock_lock_new(t->client, from_name, &from);
    if (t->rc == DLOCK_OK)
        t->rc = dlock_lock_new(t->client, to_name, &to);
    dlock_lock *pair[2] = {from, to};
    if (t->rc == DLOCK_OK)
        t->rc = dlock_multilock_new(pair, 2, &both);
    for (int i = 0; t->rc == DLOCK_OK && i < TRANSFERS; i++) {
        /* wait up to 10 s: the two threads only ever wait for each other's short sections */
        t->rc = dlock_lock_try_acquire(both, 10000, 5000);
        if (t->rc != DLOCK_OK)
            break;
        int64_t a = balance_alice, b = balance_bob;
        if (t->alice_to_bob) {
            a -= 10;
            b += 10;
        } else {
            a += 10;
            b -= 10;
        }
        balance_alice = a;
        balance_bob = b;
        t->rc = dlock_lock_release(both);
        t->done++;
    }
    /* the composite first, then its members */
    dlock_lock_free(both);
    dlock_lock_free(to);
    dlock_lock_free(from);
    return NULL;
}

/* ---- the tour ----------------------------------------------------------------------------- */

int main(void) {
    int status = 1;
    dlock_client *client = NULL;
    dlock_lock *alice = NULL, *bob = NULL, *bob2 = NULL, *carol = NULL;
    dlock_lock *transfer = NULL, *bob_carol = NULL;
    bool flag = false;
    int64_t ttl = 0;

    /* 1. One client here; members may be on any clients (other Redis servers). */
    dlock_options opts;
    dlock_options_init(&opts);
    opts.watchdog_ms = WATCHDOG_MS;
    if (!expect(dlock_client_new(&opts, &client), DLOCK_OK, "dlock_client_new"))
        return 1;
    if (!expect(dlock_lock_new(client, "example:account:alice", &alice), DLOCK_OK, "lock alice") ||
        !expect(dlock_lock_new(client, "example:account:bob", &bob), DLOCK_OK, "lock bob") ||
        !expect(dlock_lock_new(client, "example:account:carol", &carol), DLOCK_OK, "lock carol"))
        goto out;
    dlock_lock *alice_bob[2] = {alice, bob};
    if (!expect(dlock_multilock_new(alice_bob, 2, &transfer), DLOCK_OK, "dlock_multilock_new"))
        goto out;
    printf("1. MultiLock \"%s\" over alice and bob\n", dlock_lock_name(transfer));

    /* 2. Acquire takes every member for this thread. */
    if (!expect(dlock_lock_acquire(transfer, 10000), DLOCK_OK, "acquire") ||
        !expect(dlock_lock_is_held(alice, &flag), DLOCK_OK, "is_held alice") ||
        !check(flag, "alice held") ||
        !expect(dlock_lock_is_held(bob, &flag), DLOCK_OK, "is_held bob") ||
        !check(flag, "bob held") || !expect(dlock_lock_ttl(transfer, &ttl), DLOCK_OK, "ttl") ||
        !check(ttl > 0 && ttl <= 10000, "ttl within the lease"))
        goto out;
    outsider o = {.alice = alice, .bob = bob};
    pthread_t thread;
    if (!check(pthread_create(&thread, NULL, outsider_run, &o) == 0, "pthread_create"))
        goto out;
    pthread_join(thread, NULL);
    if (!expect(o.alice_rc, DLOCK_ETIMEDOUT, "another thread's try on alice") ||
        !expect(o.bob_rc, DLOCK_ETIMEDOUT, "another thread's try on bob") ||
        !expect(dlock_lock_release(transfer), DLOCK_OK, "release") ||
        !expect(dlock_lock_is_locked(alice, &flag), DLOCK_OK, "is_locked alice") ||
        !check(!flag, "alice free after release"))
        goto out;
    printf("2. acquired: alice and bob held (lease left %" PRId64 " ms); another thread got "
           "neither; released\n",
           ttl);

    /* 3. All or nothing. Another thread holds carol; a MultiLock over bob and carol waits
     * 300 ms for carol, gives up, and gives bob back. */
    carol_holder h = {
        .carol = carol, .mu = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
    if (!check(pthread_create(&thread, NULL, carol_run, &h) == 0, "pthread_create"))
        goto out;
    pthread_mutex_lock(&h.mu);
    while (!h.holding)
        pthread_cond_wait(&h.cond, &h.mu);
    pthread_mutex_unlock(&h.mu);
    /* A handle belongs to one composite at a time (the composite takes over its lost
     * callback), so this MultiLock gets a handle of its own on bob's lock. */
    if (!expect(dlock_lock_new(client, "example:account:bob", &bob2), DLOCK_OK, "lock bob (2)"))
        goto out;
    dlock_lock *bc[2] = {bob2, carol};
    int rc3 = h.acquire_rc == DLOCK_OK ? dlock_multilock_new(bc, 2, &bob_carol) : h.acquire_rc;
    int try_rc = rc3 == DLOCK_OK ? dlock_lock_try_acquire(bob_carol, 300, 10000) : rc3;
    bool bob_locked = true;
    int locked_rc = dlock_lock_is_locked(bob, &bob_locked);
    pthread_mutex_lock(&h.mu);
    h.done = true;
    pthread_cond_broadcast(&h.cond);
    pthread_mutex_unlock(&h.mu);
    pthread_join(thread, NULL);
    if (!expect(h.acquire_rc, DLOCK_OK, "carol's holder") || !expect(rc3, DLOCK_OK, "multilock") ||
        !expect(try_rc, DLOCK_ETIMEDOUT, "try_acquire bob+carol") ||
        !expect(locked_rc, DLOCK_OK, "is_locked bob") || !check(!bob_locked, "bob left free") ||
        !expect(h.release_rc, DLOCK_OK, "carol's release"))
        goto out;
    printf("3. carol held elsewhere: bob+carol -> %s after 300 ms, bob not left held\n",
           dlock_err_name(try_rc));

    /* 4. Two threads, opposite orders. Handles on one client sort the same way in both
     * MultiLocks, so each takes alice and bob in the same order and neither can hold one
     * while waiting for the other. */
    transferer t1 = {.client = client, .alice_to_bob = true};
    transferer t2 = {.client = client, .alice_to_bob = false};
    pthread_t th1, th2;
    if (!check(pthread_create(&th1, NULL, transfer_run, &t1) == 0, "pthread_create"))
        goto out;
    if (!check(pthread_create(&th2, NULL, transfer_run, &t2) == 0, "pthread_create")) {
        pthread_join(th1, NULL);
        goto out;
    }
    pthread_join(th1, NULL);
    pthread_join(th2, NULL);
    if (!expect(t1.rc, DLOCK_OK, "transfers alice -> bob") ||
        !expect(t2.rc, DLOCK_OK, "transfers bob -> alice") ||
        !check(t1.done == TRANSFERS && t2.done == TRANSFERS, "every transfer done") ||
        !check(balance_alice == 1000 && balance_bob == 1000, "balances unchanged overall"))
        goto out;
    printf("4. %d transfers each way at once: no deadlock; alice %" PRId64 ", bob %" PRId64 "\n",
           TRANSFERS, balance_alice, balance_bob);

    /* 5. The watchdog renews every member until release. */
    if (!expect(dlock_lock_acquire(transfer, DLOCK_WATCHDOG), DLOCK_OK, "acquire (watchdog)"))
        goto out;
    sleep_ms(WATCHDOG_MS + 500);
    if (!expect(dlock_lock_is_held(transfer, &flag), DLOCK_OK, "is_held") ||
        !check(flag, "still held after the lease time") ||
        !expect(dlock_lock_release(transfer), DLOCK_OK, "release") ||
        !expect(dlock_lock_is_locked(transfer, &flag), DLOCK_OK, "is_locked") ||
        !check(!flag, "every member free"))
        goto out;
    printf("5. with the watchdog: still held after %d ms; released\n", WATCHDOG_MS + 500);

    status = 0;
    printf("OK\n");
out:
    /* Composites before their members, members before the client. */
    dlock_lock_free(bob_carol);
    dlock_lock_free(transfer);
    dlock_lock_free(carol);
    dlock_lock_free(bob2);
    dlock_lock_free(bob);
    dlock_lock_free(alice);
    int rc = dlock_client_free(client);
    if (rc != DLOCK_OK) {
        fprintf(stderr, "dlock_client_free: %s (%s)\n", dlock_err_name(rc), dlock_last_error());
        status = 1;
    }
    return status;
}
