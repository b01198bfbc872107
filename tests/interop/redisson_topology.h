/* SPDX-License-Identifier: MIT */
/* redisson_topology.h — the scenes a dlock client and real Redisson peers (redisson-cli,
 * redisson_peer.h) play on one name of a topology: a Redis Cluster
 * (test_redisson_cluster.c) or a master under Sentinel (test_redisson_sentinel.c).
 *
 *   redisson_holds_dlock_waits  a Redisson lock keeps dlock out; dlock's waiter subscribes
 *                               (where the topology says) and is woken by Redisson's unlock
 *   dlock_holds_redisson_waits  the other way round
 *   semaphore_both_ways         a Redisson permit keeps dlock out and its release wakes
 *                               dlock; a dlock permit keeps Redisson out and its release
 *                               wakes Redisson; the permits come back exactly
 *   fairlock_both_ways          the same two directions for the fair lock (each waiter
 *                               woken on its own channel)
 *   lock_rounds_never_overlap   a Redisson `loop` and two dlock threads take the lock in
 *                               turn, counting on a referee server: no overlap, no count lost
 *
 * "Woken" is proven, not assumed from a short wait. dlock's side: its client counts the
 * waiters a message woke (dlock_stats.wakes), and the count must grow during the wait (a
 * semaphore waiter also looks again every 5 s by itself, which a count of wakes tells
 * apart). Redisson's side: a lock waiter that misses the message retries only when the
 * holder's lease runs out (60 s here), past its 30 s wait; a semaphore waiter only on a
 * message or its own timeout.
 *
 * Only the interop programs include this header; the functions are static inline. */
#ifndef DLOCK_TEST_REDISSON_TOPOLOGY_H
#define DLOCK_TEST_REDISSON_TOPOLOGY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "dlock.h"
#include "harness.h"
#include "redisson_peer.h"

/* A dlock wait: longer than any delay of the peer's release (x test_slack_factor()). */
#define TOPO_WAIT_MS 25000
/* How long a Redisson holder keeps the lock or permit: time for dlock's waiter to subscribe
 * (x test_slack_factor(): a slow machine gets more). */
#define TOPO_HOLD_MS 8000
#define TOPO_LINE_MAX 1024

typedef struct rj_topology {
    dlock_client *c;          /* dlock's client of the topology */
    const char *dir;          /* where the peers' logs go */
    const char *const *where; /* the redisson-cli options that name the topology */
    /* whether a client is subscribed, where the topology publishes, to a channel of the
     * object `name` (Redisson's channels, and dlock's, carry "{name}") */
    bool (*subscribed)(void *arg, const char *name);
    void *arg;
} rj_topology;

/* Lines the peers must print within: a JVM start plus Redisson's connect on a busy box. */
static inline int64_t topo_peer_ms(int64_t ms) {
    return test_slack_ms(ms + 10000) + RJ_START_MS;
}

/* Waits (generously) until someone is subscribed to name's channels, or `unless` (may be
 * NULL) has printed `event` (the wait no longer matters then). True if subscribed. */
static inline bool topo_await_subscriber(const rj_topology *t, const char *name, rj_peer *unless,
                                         const char *event) {
    char line[TOPO_LINE_MAX];
    int64_t until = test_now_ms() + topo_peer_ms(0);
    while (test_now_ms() < until) {
        if (t->subscribed(t->arg, name))
            return true;
        if (unless && rj_find(unless, event, line, sizeof(line)))
            return false;
        test_sleep_ms(10);
    }
    return false;
}

/* A dlock acquire on its own thread, released there (a hold belongs to its thread). */
typedef struct topo_acquire {
    dlock_lock *l;
    int64_t wait_ms;
    long long done_wall_ms; /* wall clock when the acquire returned */
    int release_rc;
} topo_acquire;

static inline int topo_acquire_run(void *arg) {
    topo_acquire *a = arg;
    int rc = dlock_lock_try_acquire(a->l, a->wait_ms, 60000);
    a->done_wall_ms = wall_ms();
    a->release_rc = rc == DLOCK_OK ? dlock_lock_release(a->l) : rc;
    return rc;
}

/* How many waiters of c a message has woken so far. */
static inline uint64_t topo_wakes(dlock_client *c) {
    dlock_stats st;
    dlock_stats_init(&st);
    ASSERT_RC(dlock_client_stats(c, &st), DLOCK_OK);
    return st.wakes;
}

static inline void topo_redisson_holds_dlock_waits(const rj_topology *t, const char *name) {
    char line[TOPO_LINE_MAX];
    char hold[24];
    snprintf(hold, sizeof(hold), "%lld", (long long)test_slack_ms(TOPO_HOLD_MS));
    rj_peer j;
    rj_start_at(&j, t->dir, "HOLDER", 0, t->where, (const char *const[]){"lock", name, hold, NULL});
    rj_wait_line(&j, "acquired", topo_peer_ms(0), line, sizeof(line));
    dlock_lock *l = NULL;
    ASSERT_RC(dlock_lock_new(t->c, name, &l), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(l, 0, 60000), DLOCK_ETIMEDOUT); /* Redisson holds it */

    uint64_t wakes = topo_wakes(t->c);
    topo_acquire a = {.l = l, .wait_ms = test_slack_ms(TOPO_WAIT_MS)};
    blocking_call bc;
    blocking_call_start(&bc, topo_acquire_run, &a);
    bool subscribed = topo_await_subscriber(t, name, &j, "unlocking");
    int rc = blocking_call_join(&bc);
    if (!subscribed)
        fail_msg("dlock's waiter on %s never showed on the topology's pub/sub before Redisson "
                 "let go (see %s)",
                 name, j.log);
    ASSERT_RC(rc, DLOCK_OK);
    assert_true(topo_wakes(t->c) > wakes); /* woken by Redisson's message */
    assert_int_equal(rj_wait_exit(&j, topo_peer_ms(0)), 0);
    assert_true(rj_find(&j, "unlocking", line, sizeof(line)));
    long long unlocking = rj_epoch_ms(line);
    printf("# %s: dlock got it %lld ms after Redisson's unlock began\n", name,
           a.done_wall_ms - unlocking);
    assert_true(a.done_wall_ms >= unlocking); /* not before Redisson let go */
    ASSERT_RC(a.release_rc, DLOCK_OK);
    rj_stop(&j);
    dlock_lock_free(l);
}

static inline void topo_dlock_holds_redisson_waits(const rj_topology *t, const char *name) {
    char line[TOPO_LINE_MAX];
    dlock_lock *l = NULL;
    ASSERT_RC(dlock_lock_new(t->c, name, &l), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(l, 0, 60000), DLOCK_OK); /* a 60 s lease */
    rj_peer j;
    rj_start_at(&j, t->dir, "WAITER", 0, t->where,
                (const char *const[]){"trylock", name, "30000", "-1", "0", NULL});
    rj_wait_line(&j, "trylock-begin", topo_peer_ms(0), line, sizeof(line));
    if (!topo_await_subscriber(t, name, NULL, NULL))
        fail_msg("Redisson's waiter on %s never subscribed (see %s)", name, j.log);
    assert_false(rj_find(&j, "acquired", line, sizeof(line))); /* dlock holds it */
    long long released = wall_ms();
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    /* woken: without the message it would wait for the 60 s lease, past its 30 s */
    assert_int_equal(rj_wait_exit(&j, topo_peer_ms(30000)), 0);
    assert_true(rj_find(&j, "acquired", line, sizeof(line)));
    printf("# %s: Redisson got it %lld ms after dlock's release\n", name,
           rj_epoch_ms(line) - released);
    assert_true(rj_epoch_ms(line) >= released);
    rj_stop(&j);
    dlock_lock_free(l);
}

static inline void topo_semaphore_both_ways(const rj_topology *t, const char *name) {
    char line[TOPO_LINE_MAX];
    dlock_semaphore *s = NULL;
    ASSERT_RC(dlock_semaphore_new(t->c, name, &s), DLOCK_OK);
    bool set = false;
    ASSERT_RC(dlock_semaphore_try_set_permits(s, 1, &set), DLOCK_OK);
    assert_true(set);

    /* Redisson takes the one permit: dlock is kept out, then woken by its release */
    char hold[24];
    snprintf(hold, sizeof(hold), "%lld", (long long)test_slack_ms(TOPO_HOLD_MS));
    rj_peer a;
    rj_start_at(&a, t->dir, "SEM-A", 0, t->where,
                (const char *const[]){"semaphore", name, "-1", "1", hold, NULL});
    rj_wait_line(&a, "acquired", topo_peer_ms(0), line, sizeof(line));
    ASSERT_RC(dlock_semaphore_try_acquire(s, 1, 0), DLOCK_ETIMEDOUT);
    uint64_t wakes = topo_wakes(t->c);
    ASSERT_RC(dlock_semaphore_try_acquire(s, 1, test_slack_ms(TOPO_WAIT_MS)), DLOCK_OK);
    assert_true(topo_wakes(t->c) > wakes); /* woken by Redisson's release */
    assert_int_equal(rj_wait_exit(&a, topo_peer_ms(0)), 0);

    /* dlock holds it: Redisson waits, and is woken by dlock's release */
    rj_peer b;
    rj_start_at(&b, t->dir, "SEM-B", 0, t->where,
                (const char *const[]){"semaphore", name, "-1", "1", "0", "30000", NULL});
    rj_wait_line(&b, "acquire-begin", topo_peer_ms(0), line, sizeof(line));
    if (!topo_await_subscriber(t, name, NULL, NULL))
        fail_msg("Redisson's semaphore waiter on %s never subscribed (see %s)", name, b.log);
    assert_false(rj_find(&b, "acquired", line, sizeof(line)));
    ASSERT_RC(dlock_semaphore_release(s, 1), DLOCK_OK);
    assert_int_equal(rj_wait_exit(&b, topo_peer_ms(30000)), 0); /* 1: it timed out */
    assert_true(rj_find(&b, "acquired", line, sizeof(line)));

    int64_t available = -1;
    ASSERT_RC(dlock_semaphore_available(s, &available), DLOCK_OK);
    assert_int_equal(available, 1);
    rj_stop(&a);
    rj_stop(&b);
    dlock_semaphore_free(s);
}

/* A fair lock both ways: a Redisson holder keeps a dlock fair waiter out, and its unlock
 * (the message on the first waiter's own channel) wakes it; a dlock holder keeps a Redisson
 * fair waiter out, and dlock's release wakes it. */
static inline void topo_fairlock_both_ways(const rj_topology *t, const char *name) {
    char line[TOPO_LINE_MAX], hold[24];
    snprintf(hold, sizeof(hold), "%lld", (long long)test_slack_ms(TOPO_HOLD_MS));
    rj_peer h;
    rj_start_at(&h, t->dir, "FAIR-HOLDER", 0, t->where,
                (const char *const[]){"fairlock", name, hold, NULL});
    rj_wait_line(&h, "acquired", topo_peer_ms(0), line, sizeof(line));
    dlock_lock *l = NULL;
    ASSERT_RC(dlock_fairlock_new(t->c, name, &l), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(l, 0, 60000), DLOCK_ETIMEDOUT);
    uint64_t wakes = topo_wakes(t->c);
    topo_acquire a = {.l = l, .wait_ms = test_slack_ms(TOPO_WAIT_MS)};
    blocking_call bc;
    blocking_call_start(&bc, topo_acquire_run, &a);
    ASSERT_RC(blocking_call_join(&bc), DLOCK_OK);
    assert_true(topo_wakes(t->c) > wakes); /* woken by Redisson's unlock */
    assert_true(rj_find(&h, "unlocking", line, sizeof(line)));
    assert_true(a.done_wall_ms >= rj_epoch_ms(line));
    ASSERT_RC(a.release_rc, DLOCK_OK);
    assert_int_equal(rj_wait_exit(&h, topo_peer_ms(0)), 0);

    ASSERT_RC(dlock_lock_try_acquire(l, 0, 60000), DLOCK_OK); /* a 60 s lease */
    rj_peer w;
    rj_start_at(&w, t->dir, "FAIR-WAITER", 0, t->where,
                (const char *const[]){"fairlock", name, "0", "30000", NULL});
    rj_wait_line(&w, "lock-begin", topo_peer_ms(0), line, sizeof(line));
    if (!topo_await_subscriber(t, name, NULL, NULL))
        fail_msg("Redisson's fair waiter on %s never subscribed (see %s)", name, w.log);
    assert_false(rj_find(&w, "acquired", line, sizeof(line)));
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    assert_int_equal(rj_wait_exit(&w, topo_peer_ms(30000)), 0); /* 1: it timed out */
    assert_true(rj_find(&w, "acquired", line, sizeof(line)));
    rj_stop(&h);
    rj_stop(&w);
    dlock_lock_free(l);
}

/* ---- rounds: both languages in one tight contest ------------------------------------------- */

#define TOPO_JAVA_ROUNDS "100"
#define TOPO_C_THREADS 2
#define TOPO_C_ROUNDS 50

typedef struct topo_rounds {
    const rj_topology *t;
    redis_fixture *data;
    const char *name;
    int id;
    atomic_long *overlaps;
    atomic_long *failures; /* an acquire or release that was not DLOCK_OK */
} topo_rounds;

static inline void *topo_rounds_main(void *arg) {
    topo_rounds *r = arg;
    dlock_lock *l = NULL;
    char me[16];
    snprintf(me, sizeof(me), "C%d", r->id);
    if (dlock_lock_new(r->t->c, r->name, &l) != DLOCK_OK) {
        atomic_fetch_add(r->failures, 1);
        return NULL;
    }
    for (int i = 0; i < TOPO_C_ROUNDS; i++) {
        if (dlock_lock_try_acquire(l, 60000, 30000) != DLOCK_OK) {
            atomic_fetch_add(r->failures, 1);
            break;
        }
        rj_round_inside(r->data, r->name, me, r->overlaps);
        if (dlock_lock_release(l) != DLOCK_OK)
            atomic_fetch_add(r->failures, 1);
    }
    dlock_lock_free(l);
    return NULL;
}

/* A Redisson `loop` of 100 rounds and 2 dlock threads of 50 rounds each take the lock `name`
 * of the topology in turn, each round a non-atomic read-modify-write of a counter on a
 * referee server of its own (redisson-cli --data): no side ever finds the other inside, and
 * the counter ends at 200. */
static inline void topo_lock_rounds_never_overlap(const rj_topology *t, const char *name) {
    redis_fixture *data = start_tcp_server();
    char hostport[64], line[TOPO_LINE_MAX];
    snprintf(hostport, sizeof(hostport), "127.0.0.1:%d", redis_fixture_port(data));
    const char *where[PEER_ARGS_MAX];
    int n = 0;
    for (const char *const *w = t->where; *w && n < PEER_ARGS_MAX - 3; w++)
        where[n++] = *w;
    where[n++] = "--data";
    where[n++] = hostport;
    where[n] = NULL;
    rj_peer j;
    rj_start_at(&j, t->dir, "LOOP", 0, where,
                (const char *const[]){"loop", name, TOPO_JAVA_ROUNDS, "lock", "500", NULL});
    rj_wait_line(&j, "loop-begin", topo_peer_ms(0), line, sizeof(line));

    atomic_long overlaps = 0, failures = 0;
    topo_rounds r[TOPO_C_THREADS];
    pthread_t threads[TOPO_C_THREADS];
    for (int i = 0; i < TOPO_C_THREADS; i++) {
        r[i] = (topo_rounds){.t = t,
                             .data = data,
                             .name = name,
                             .id = i,
                             .overlaps = &overlaps,
                             .failures = &failures};
        assert_int_equal(pthread_create(&threads[i], NULL, topo_rounds_main, &r[i]), 0);
    }
    for (int i = 0; i < TOPO_C_THREADS; i++)
        assert_int_equal(pthread_join(threads[i], NULL), 0);
    int status = rj_wait_exit(&j, topo_peer_ms(60000));
    assert_true(rj_find(&j, "loop-done", line, sizeof(line)));
    printf("# %s: java %s", name, strchr(line, ' ') + 1);
    assert_int_equal(status, 0); /* Java: no overlap, no lost hold */
    assert_int_equal(rj_value(line, "overlaps"), 0);
    assert_int_equal(atomic_load(&overlaps), 0);
    assert_int_equal(atomic_load(&failures), 0);
    assert_int_equal(redis_fixture_int(data, "GET %s:counter", name),
                     atoll(TOPO_JAVA_ROUNDS) + TOPO_C_THREADS * TOPO_C_ROUNDS);
    rj_stop(&j);
    redis_fixture_stop(data);
}

#endif
