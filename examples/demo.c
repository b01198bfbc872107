/* SPDX-License-Identifier: MIT */
/* demo.c — `make demo`: a flash sale. 10 items, 100 buyers, two services.
 *
 * Two dlock clients stand for two services (each its own connections, its own client id);
 * 50 buyer threads run on each. A buyer reads the stock, and if there is any left it pays
 * (about 1 ms) and takes one item. That is a check-then-act race, and the demo runs it
 * twice:
 *
 *   1. without a lock: buyers who read "1 left" at the same time all pay: oversold;
 *   2. with the fenced lock "flash-sale:item-42": each buyer holds the lock from the read
 *      to the write. Exactly 10 buy, the others are told "sold out", and every holder's
 *      fencing token is higher than the one before.
 *
 * The stock is a counter in this process, standing in for the database row both services
 * would update; the only thing that orders the buyers in run 2 is the lock in Redis (the
 * two clients share nothing else). The counter is atomic so that run 1 is a race of the
 * program's logic, not undefined behaviour.
 *
 * Reads the server from $DLOCK_URL (`make demo` starts a private redis-server on a unix
 * socket and sets it). Exits 0 only if run 2 ends with stock 0, exactly 10 buyers, never
 * two buyers inside the lock at once, strictly increasing tokens and no failed call. */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dlock.h"

enum { ITEMS = 10, BUYERS = 100, SERVICES = 2, WAIT_MS = 5000, PAY_MS = 1 };
#define LOCK_NAME "flash-sale:item-42"

/* The shop. */
static atomic_int stock;
static atomic_int sales;   /* items sold, also each buyer's place in the sale order */
static atomic_int entries; /* buyers let into the lock so far, in order */
static atomic_int inside;  /* buyers inside the lock right now */
static atomic_int max_inside;

/* The start gate: every buyer thread is created first, then all are let go at once. */
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static bool gate_open;

typedef struct buyer {
    int id;           /* 0..BUYERS-1; service id % SERVICES */
    dlock_lock *lock; /* NULL: buy without a lock */
    /* results, read by main after the join */
    bool bought, sold_out, gave_up;
    int sale;  /* 1..ITEMS: place in the sale order */
    int entry; /* 1..BUYERS: place in the lock's order */
    uint64_t token;
    int rc;             /* first failed call, DLOCK_OK if none */
    const char *failed; /* which call */
    char detail[160];   /* dlock_last_error() of that call */
} buyer;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void pay(void) {
    struct timespec ts = {0, PAY_MS * 1000000L};
    nanosleep(&ts, NULL);
}

static void note_failure(buyer *b, int rc, const char *call) {
    if (b->rc != DLOCK_OK)
        return;
    b->rc = rc;
    b->failed = call;
    snprintf(b->detail, sizeof(b->detail), "%s", dlock_last_error());
}

/* Check stock, pay, take one: the part the lock must cover. */
static void check_pay_take(buyer *b) {
    if (atomic_load(&stock) <= 0) {
        b->sold_out = true;
        return;
    }
    pay();
    atomic_fetch_sub(&stock, 1);
    b->sale = atomic_fetch_add(&sales, 1) + 1;
    b->bought = true;
}

static void *buy(void *arg) {
    buyer *b = arg;
    pthread_mutex_lock(&gate_mu);
    while (!gate_open)
        pthread_cond_wait(&gate_cv, &gate_mu);
    pthread_mutex_unlock(&gate_mu);

    if (!b->lock) {
        check_pay_take(b);
        return NULL;
    }
    int rc = dlock_lock_try_acquire(b->lock, WAIT_MS, DLOCK_WATCHDOG);
    if (rc == DLOCK_ETIMEDOUT) {
        b->gave_up = true;
        return NULL;
    }
    if (rc != DLOCK_OK) {
        note_failure(b, rc, "dlock_lock_try_acquire");
        return NULL;
    }
    int now_inside = atomic_fetch_add(&inside, 1) + 1;
    int seen = atomic_load(&max_inside);
    while (now_inside > seen && !atomic_compare_exchange_weak(&max_inside, &seen, now_inside)) {
    }
    b->entry = atomic_fetch_add(&entries, 1) + 1;
    rc = dlock_lock_token(b->lock, &b->token);
    if (rc != DLOCK_OK)
        note_failure(b, rc, "dlock_lock_token");
    else
        check_pay_take(b);
    atomic_fetch_sub(&inside, 1);
    rc = dlock_lock_release(b->lock);
    if (rc != DLOCK_OK)
        note_failure(b, rc, "dlock_lock_release");
    return NULL;
}

/* Runs one sale: every buyer starts at the gate; locks[s] is service s's lock handle, or
 * NULL for a sale without a lock. Returns the time it took in ms, or -1 if a thread could
 * not be started. */
static double run_sale(buyer *buyers, dlock_lock *const *locks) {
    atomic_store(&stock, ITEMS);
    atomic_store(&sales, 0);
    atomic_store(&entries, 0);
    atomic_store(&inside, 0);
    atomic_store(&max_inside, 0);
    gate_open = false;

    pthread_t threads[BUYERS];
    int started = 0;
    for (int i = 0; i < BUYERS; i++) {
        memset(&buyers[i], 0, sizeof(buyers[i]));
        buyers[i].id = i;
        buyers[i].lock = locks ? locks[i % SERVICES] : NULL;
        if (pthread_create(&threads[i], NULL, buy, &buyers[i]) != 0) {
            fprintf(stderr, "pthread_create failed for buyer %d\n", i);
            break;
        }
        started++;
    }
    double t0 = now_ms();
    pthread_mutex_lock(&gate_mu);
    gate_open = true;
    pthread_cond_broadcast(&gate_cv);
    pthread_mutex_unlock(&gate_mu);
    for (int i = 0; i < started; i++)
        pthread_join(threads[i], NULL);
    return started == BUYERS ? now_ms() - t0 : -1;
}

typedef struct tally {
    int bought, sold_out, gave_up;
} tally;

static tally count(const buyer *buyers) {
    tally t = {0};
    for (int i = 0; i < BUYERS; i++) {
        t.bought += buyers[i].bought;
        t.sold_out += buyers[i].sold_out;
        t.gave_up += buyers[i].gave_up;
    }
    return t;
}

int main(void) {
    static buyer buyers[BUYERS];
    dlock_client *clients[SERVICES] = {0};
    dlock_lock *locks[SERVICES] = {0};
    int status = 1, rc;

    const char *url = getenv("DLOCK_URL");
    printf("dlock %s flash sale: %d items, %d buyers, %d services x %d buyer threads\n",
           dlock_version_string(), ITEMS, BUYERS, SERVICES, BUYERS / SERVICES);
    printf("Redis: %s\n", url ? url : "redis://127.0.0.1:6379 (default; set DLOCK_URL)");
    for (int s = 0; s < SERVICES; s++) {
        rc = dlock_client_new(NULL, &clients[s]); /* NULL options: the URL from $DLOCK_URL */
        if (rc != DLOCK_OK) {
            fprintf(stderr, "dlock_client_new: %s (%s)\n", dlock_err_name(rc), dlock_last_error());
            goto out;
        }
        rc = dlock_fencedlock_new(clients[s], LOCK_NAME, &locks[s]);
        if (rc != DLOCK_OK) {
            fprintf(stderr, "dlock_fencedlock_new: %s (%s)\n", dlock_err_name(rc),
                    dlock_last_error());
            goto out;
        }
        printf("service %c: dlock client %s\n", 'A' + s, dlock_client_id(clients[s]));
    }

    /* 1. Without a lock. */
    double ms = run_sale(buyers, NULL);
    if (ms < 0)
        goto out;
    int bought = count(buyers).bought;
    int left = atomic_load(&stock);
    printf("\n1. without a lock: %d buyers for %d items, stock %d", bought, ITEMS, left);
    printf(bought > ITEMS ? " -> OVERSOLD by %d\n" : " (no overselling this time, by luck)\n",
           bought - ITEMS);

    /* 2. With the fenced lock: same buyers, same code, each holding the lock from the check
     * to the write. */
    ms = run_sale(buyers, locks);
    if (ms < 0)
        goto out;
    tally t = count(buyers);
    bought = t.bought;
    left = atomic_load(&stock);
    printf("2. with dlock (fenced lock \"%s\", wait %d ms, watchdog lease):\n", LOCK_NAME, WAIT_MS);
    printf("   %d buyers, stock %d, %d told sold out", bought, left, t.sold_out);
    if (t.gave_up)
        printf(", %d gave up waiting", t.gave_up);
    printf(" (%.0f ms for %d lock holds)\n", ms, atomic_load(&entries));

    /* Order the lock's holders by entry: each must carry a higher token than the one
     * before. Print the buyers in the order they bought. */
    const buyer *by_entry[BUYERS + 1] = {0};
    const buyer *by_sale[ITEMS + 1] = {0};
    int failures = 0;
    for (int i = 0; i < BUYERS; i++) {
        const buyer *b = &buyers[i];
        if (b->rc != DLOCK_OK) {
            if (failures++ == 0)
                fprintf(stderr, "buyer %d: %s: %s (%s)\n", b->id, b->failed, dlock_err_name(b->rc),
                        b->detail);
        }
        if (b->entry >= 1 && b->entry <= BUYERS)
            by_entry[b->entry] = b;
        if (b->bought && b->sale >= 1 && b->sale <= ITEMS)
            by_sale[b->sale] = b;
    }
    bool increasing = true;
    uint64_t prev = 0;
    for (int e = 1; e <= atomic_load(&entries); e++) {
        if (!by_entry[e] || (e > 1 && by_entry[e]->token <= prev))
            increasing = false;
        prev = by_entry[e] ? by_entry[e]->token : prev;
    }
    printf("   the buyers in order (service, thread #: fencing token):");
    for (int s = 1; s <= ITEMS; s++) {
        if (s % 5 == 1)
            printf("\n     ");
        if (by_sale[s])
            printf("  %c #%02d: %" PRIu64, 'A' + by_sale[s]->id % SERVICES, by_sale[s]->id,
                   by_sale[s]->token);
    }
    printf("\n   fencing tokens strictly increasing over all %d holds: %s\n", atomic_load(&entries),
           increasing ? "yes" : "NO");
    printf("   most buyers inside the lock at once: %d\n", atomic_load(&max_inside));
    if (failures)
        printf("   %d buyer(s) saw a dlock call fail (first one above)\n", failures);

    if (left == 0 && bought == ITEMS && atomic_load(&max_inside) == 1 && increasing &&
        failures == 0) {
        printf("OK: sold exactly %d, never oversold\n", ITEMS);
        status = 0;
    } else {
        printf("FAILED: expected stock 0, %d buyers, one buyer inside at a time\n", ITEMS);
    }

out:
    for (int s = 0; s < SERVICES; s++) {
        dlock_lock_free(locks[s]);
        rc = dlock_client_free(clients[s]);
        if (rc != DLOCK_OK) {
            fprintf(stderr, "dlock_client_free: %s (%s)\n", dlock_err_name(rc), dlock_last_error());
            status = 1;
        }
    }
    return status;
}
