/* SPDX-License-Identifier: MIT */
/* soak_blocking.c - the blocking face of the soak: soak_cfg.threads threads on each of two
 * clients, plus one long holder per client (and as many on the Sentinel and Cluster
 * clients, each with its own range of names).
 *
 * A worker thread runs the kinds in turn (each thread starting at a different kind, so
 * that every kind runs at once somewhere) on names picked at random from a pool of
 * soak_cfg.names per kind. Every operation makes its handle, acquires with a bounded wait,
 * marks its critical section for a millisecond or three, releases and frees the handle.
 * Leases alternate between the watchdog and a fixed 30 s, so both kinds of hold go
 * through every fault. Composites take one member from each client, so answers cross
 * between the clients' loops.
 *
 * The long holders keep a watchdog lock for ten seconds at a time: they are what the
 * watchdog renews across the faults (a worker's holds are too short to see a renewal).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "soak.h"

#define WAIT_MS 2000         /* an acquire gives up after this (DLOCK_ETIMEDOUT) */
#define FIXED_LEASE_MS 30000 /* the lease of holds not under the watchdog */
#define LONG_HOLD_MS 10000   /* how long a long holder keeps its lock */
#define LONG_NAMES 4

typedef struct worker {
    pthread_t thread;
    dlock_client *mine;
    dlock_client *other;
    int name_base; /* this worker's names are name_base .. name_base + names - 1 */
    int id;
    bool long_holder;
    char who[64];
} worker;

#define MAX_WORKERS 256

static worker workers[MAX_WORKERS];
static int worker_count;

static int64_t pick_lease(void) {
    return (soak_rand() & 1) ? DLOCK_WATCHDOG : FIXED_LEASE_MS;
}

static int pick_name(const worker *w) {
    return w->name_base + (int)(soak_rand() % (uint32_t)soak_cfg.names);
}

static void hold_briefly(void) {
    soak_sleep_ms(1 + soak_rand() % 3);
}

static void mark_enter(enum soak_kind k, enum soak_group g, int idx, const char *who) {
    if (k == SOAK_READ)
        soak_mark_shared(g, idx, who);
    else
        soak_mark_exclusive(g, idx, who);
}

static void mark_leave(enum soak_kind k, enum soak_group g, int idx) {
    if (k == SOAK_READ)
        soak_leave_shared(g, idx);
    else
        soak_leave_exclusive(g, idx);
}

/* SOAK_SELFTEST=overlap: half of the reentrant-lock sections on the first name skip the
 * lock. */
static bool selftest_skip_lock(const worker *w, enum soak_kind k, int *idx) {
    if (k != SOAK_LOCK || strcmp(soak_cfg.selftest, "overlap") != 0)
        return false;
    *idx = w->name_base;
    return soak_rand() & 1;
}

/* The single locks: reentrant, fenced, fair, spin and the read-write halves. */
static void run_single_lock(worker *w, enum soak_kind k) {
    static const enum soak_group group_of[] = {
        [SOAK_LOCK] = GROUP_LOCK, [SOAK_FENCED] = GROUP_FENCED, [SOAK_FAIR] = GROUP_FAIR,
        [SOAK_SPIN] = GROUP_SPIN, [SOAK_READ] = GROUP_RW,       [SOAK_WRITE] = GROUP_RW,
    };
    enum soak_group g = group_of[k];
    int idx = pick_name(w);
    char name[64];
    if (selftest_skip_lock(w, k, &idx)) {
        mark_enter(k, g, idx, w->who);
        hold_briefly();
        mark_leave(k, g, idx);
        return;
    }
    soak_name(name, g, idx, NULL);
    dlock_lock *l = NULL;
    dlock_rwlock *rw = NULL;
    int rc;
    switch (k) {
    case SOAK_FENCED:
        rc = dlock_fencedlock_new(w->mine, name, &l);
        break;
    case SOAK_FAIR:
        rc = dlock_fairlock_new(w->mine, name, &l);
        break;
    case SOAK_SPIN:
        rc = dlock_spinlock_new(w->mine, name, &l);
        break;
    case SOAK_READ:
    case SOAK_WRITE:
        rc = dlock_rwlock_new(w->mine, name, &rw);
        if (rc == DLOCK_OK)
            l = k == SOAK_READ ? dlock_rwlock_read(rw) : dlock_rwlock_write(rw);
        break;
    default:
        rc = dlock_lock_new(w->mine, name, &l);
        break;
    }
    if (rc != DLOCK_OK) {
        soak_outcome(k, 0, rc, "new");
        return;
    }
    soak_outcome(k, 0, dlock_lock_on_lost(l, soak_on_lost, NULL), "on_lost");
    int64_t lease = pick_lease();
    rc = dlock_lock_try_acquire(l, WAIT_MS, lease);
    soak_outcome(k, 0, rc, "acquire");
    if (rc == DLOCK_OK) {
        /* The reentrant lock is taken twice: the inner hold must come at once. */
        int inner = k == SOAK_LOCK ? dlock_lock_try_acquire(l, 0, lease) : -1;
        if (k == SOAK_LOCK)
            soak_outcome(k, 0, inner, "reacquire");
        mark_enter(k, g, idx, w->who);
        if (k == SOAK_FENCED) {
            uint64_t token = 0;
            int trc = dlock_lock_token(l, &token);
            soak_outcome(k, 0, trc, "token");
            if (trc == DLOCK_OK)
                soak_fenced_token(idx, token, w->who);
        }
        hold_briefly();
        mark_leave(k, g, idx);
        if (inner == DLOCK_OK)
            soak_outcome(k, 0, dlock_lock_release(l), "release inner");
        soak_outcome(k, 0, dlock_lock_release(l), "release");
    }
    if (rw)
        dlock_rwlock_free(rw);
    else
        dlock_lock_free(l);
}

static void run_semaphore(worker *w) {
    int idx = pick_name(w);
    char name[64];
    soak_name(name, GROUP_SEMAPHORE, idx, NULL);
    dlock_semaphore *s = NULL;
    int rc = dlock_semaphore_new(w->mine, name, &s);
    if (rc != DLOCK_OK) {
        soak_outcome(SOAK_SEMAPHORE, 0, rc, "new");
        return;
    }
    bool was_set = false;
    soak_outcome(SOAK_SEMAPHORE, 0, dlock_semaphore_try_set_permits(s, SOAK_PERMIT_COUNT, &was_set),
                 "set permits");
    rc = dlock_semaphore_try_acquire(s, 1, WAIT_MS);
    soak_outcome(SOAK_SEMAPHORE, 0, rc, "acquire");
    if (rc == DLOCK_OK) {
        soak_mark_counted(GROUP_SEMAPHORE, idx, w->who);
        hold_briefly();
        soak_leave_counted(GROUP_SEMAPHORE, idx);
        soak_outcome(SOAK_SEMAPHORE, 0, dlock_semaphore_release(s, 1), "release");
    }
    dlock_semaphore_free(s);
}

static void run_permits(worker *w) {
    int idx = pick_name(w);
    char name[64];
    soak_name(name, GROUP_PERMITS, idx, NULL);
    dlock_permits *p = NULL;
    int rc = dlock_permits_new(w->mine, name, &p);
    if (rc != DLOCK_OK) {
        soak_outcome(SOAK_PERMITS, 0, rc, "new");
        return;
    }
    bool was_set = false;
    soak_outcome(SOAK_PERMITS, 0, dlock_permits_try_set_permits(p, SOAK_PERMIT_COUNT, &was_set),
                 "set permits");
    dlock_permit_id id;
    rc = dlock_permits_acquire(p, WAIT_MS, FIXED_LEASE_MS, &id);
    soak_outcome(SOAK_PERMITS, 0, rc, "acquire");
    if (rc == DLOCK_OK) {
        soak_mark_counted(GROUP_PERMITS, idx, w->who);
        hold_briefly();
        soak_leave_counted(GROUP_PERMITS, idx);
        soak_outcome(SOAK_PERMITS, 0, dlock_permits_release(p, &id), "release");
    }
    dlock_permits_free(p);
}

static void run_latch(worker *w) {
    int idx = pick_name(w);
    char name[64];
    soak_name(name, GROUP_LATCH, idx, NULL);
    dlock_latch *l = NULL;
    int rc = dlock_latch_new(w->mine, name, &l);
    if (rc != DLOCK_OK) {
        soak_outcome(SOAK_LATCH, 0, rc, "new");
        return;
    }
    bool was_set = false;
    soak_outcome(SOAK_LATCH, 0, dlock_latch_try_set_count(l, 1, &was_set), "set count");
    soak_outcome(SOAK_LATCH, 0, dlock_latch_count_down(l), "count down");
    /* Another worker may have set it again in between: then the await times out. */
    soak_outcome(SOAK_LATCH, 0, dlock_latch_await(l, 500), "await");
    dlock_latch_free(l);
}

/* MultiLock: two reentrant locks of the lock pool, one on each client. RedLock: three
 * members of one RedLock name (":a", ":b", ":c") on the two clients. */
static void run_composite(worker *w, enum soak_kind k) {
    dlock_lock *members[3] = {NULL, NULL, NULL};
    size_t n = k == SOAK_MULTI ? 2 : 3;
    int idx[2] = {pick_name(w), pick_name(w)};
    if (k == SOAK_MULTI && idx[1] == idx[0])
        idx[1] = w->name_base + (idx[0] - w->name_base + 1) % soak_cfg.names;
    int rc = DLOCK_OK;
    for (size_t i = 0; i < n && rc == DLOCK_OK; i++) {
        char name[64];
        static const char *const red_suffix[] = {":a", ":b", ":c"};
        if (k == SOAK_MULTI)
            soak_name(name, GROUP_LOCK, idx[i], NULL);
        else
            soak_name(name, GROUP_RED, idx[0], red_suffix[i]);
        rc = dlock_lock_new(i == 1 ? w->other : w->mine, name, &members[i]);
    }
    dlock_lock *composite = NULL;
    if (rc == DLOCK_OK)
        rc = k == SOAK_MULTI ? dlock_multilock_new(members, n, &composite)
                             : dlock_redlock_new(members, n, &composite);
    if (rc != DLOCK_OK) {
        soak_outcome(k, 0, rc, "new");
    } else {
        soak_outcome(k, 0, dlock_lock_on_lost(composite, soak_on_lost, NULL), "on_lost");
        rc = dlock_lock_try_acquire(composite, WAIT_MS, pick_lease());
        soak_outcome(k, 0, rc, "acquire");
        if (rc == DLOCK_OK) {
            if (k == SOAK_MULTI) {
                soak_mark_exclusive(GROUP_LOCK, idx[0], w->who);
                soak_mark_exclusive(GROUP_LOCK, idx[1], w->who);
            } else {
                soak_mark_exclusive(GROUP_RED, idx[0], w->who);
            }
            hold_briefly();
            if (k == SOAK_MULTI) {
                soak_leave_exclusive(GROUP_LOCK, idx[1]);
                soak_leave_exclusive(GROUP_LOCK, idx[0]);
            } else {
                soak_leave_exclusive(GROUP_RED, idx[0]);
            }
            soak_outcome(k, 0, dlock_lock_release(composite), "release");
        }
        dlock_lock_free(composite);
    }
    for (size_t i = 0; i < n; i++)
        dlock_lock_free(members[i]);
}

static void run_kind(worker *w, enum soak_kind k) {
    switch (k) {
    case SOAK_SEMAPHORE:
        run_semaphore(w);
        break;
    case SOAK_PERMITS:
        run_permits(w);
        break;
    case SOAK_LATCH:
        run_latch(w);
        break;
    case SOAK_MULTI:
    case SOAK_RED:
        run_composite(w, k);
        break;
    default:
        run_single_lock(w, k);
        break;
    }
}

/* A long holder: a watchdog lock kept LONG_HOLD_MS (or until the work ends). */
static void run_long_hold(worker *w) {
    int idx = w->name_base + (int)(soak_rand() % LONG_NAMES);
    char name[64];
    soak_name(name, GROUP_LONG, idx, NULL);
    dlock_lock *l = NULL;
    int rc = dlock_lock_new(w->mine, name, &l);
    if (rc != DLOCK_OK) {
        soak_outcome(SOAK_LOCK, 0, rc, "long new");
        soak_sleep_ms(100);
        return;
    }
    soak_outcome(SOAK_LOCK, 0, dlock_lock_on_lost(l, soak_on_lost, NULL), "on_lost");
    rc = dlock_lock_try_acquire(l, WAIT_MS, DLOCK_WATCHDOG);
    soak_outcome(SOAK_LOCK, 0, rc, "long acquire");
    if (rc == DLOCK_OK) {
        soak_mark_exclusive(GROUP_LONG, idx, w->who);
        int64_t until = soak_now_ms() + LONG_HOLD_MS;
        while (soak_now_ms() < until && !atomic_load(&soak_stopping))
            soak_sleep_ms(50);
        soak_leave_exclusive(GROUP_LONG, idx);
        soak_outcome(SOAK_LOCK, 0, dlock_lock_release(l), "long release");
    }
    dlock_lock_free(l);
}

static void *worker_main(void *arg) {
    worker *w = arg;
    long n = w->id;
    while (!atomic_load(&soak_stopping)) {
        if (w->long_holder) {
            run_long_hold(w);
            continue;
        }
        run_kind(w, soak_next_kind(&n));
        if (soak_cfg.pace_ms > 0)
            soak_sleep_ms(soak_cfg.pace_ms);
    }
    return NULL;
}

int soak_blocking_start(dlock_client *a, dlock_client *b, int name_base, const char *label) {
    dlock_client *clients[2] = {a, b};
    int per_client = soak_cfg.threads + 1;
    for (int i = 0; i < 2 * per_client; i++) {
        if (worker_count == MAX_WORKERS) {
            fprintf(stderr, "soak: more than %d workers\n", MAX_WORKERS);
            return -1;
        }
        worker *w = &workers[worker_count];
        int client_index = i / per_client;
        w->mine = clients[client_index];
        w->other = clients[1 - client_index];
        w->name_base = name_base;
        w->id = i;
        w->long_holder = i % per_client == soak_cfg.threads;
        snprintf(w->who, sizeof w->who, "%s client %d %s %d", label, client_index + 1,
                 w->long_holder ? "long holder" : "thread", i % per_client);
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
            fprintf(stderr, "soak: pthread_create failed\n");
            return -1;
        }
        worker_count++;
    }
    return 0;
}

void soak_blocking_join(void) {
    for (int i = 0; i < worker_count; i++)
        pthread_join(workers[i].thread, NULL);
    worker_count = 0;
}
