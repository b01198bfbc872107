/* SPDX-License-Identifier: MIT */
/* test_cluster_renew.c — the watchdog of a redis-cluster:// client: 3,000 watchdog locks on
 * names spread over the three masters of one 6-node cluster.
 *
 * What is proven: each master gets its own leases' renewals, renew_batch to a script call
 * (its EVALSHA calls per tick, as its own commandstats count them, are ceil(its leases /
 * renew_batch)), every key keeps a TTL over several lease periods and nothing is reported
 * lost; slots of held locks moved to another master (MIGRATE) keep their leases, and the
 * batches follow them to the new owner; and a master that stops answering (SIGSTOP) for longer than
 * the lease makes its own leases lost, every one of them, while the other masters' leases are
 * renewed on.
 *
 * The nodes are told not to fail over (cluster-replica-no-failover) and to keep serving
 * their slots while one master is down (cluster-require-full-coverage no): what is tested
 * is the client with a node lost, not a failover (tests/fault/test_cluster_*.c). The
 * client runs with watchdog_ms 2400 (a tick every 800 ms): long enough that a loaded machine
 * renews every lease in time, so that "nothing lost" is about the client, not the machine.
 *
 * It takes about 20 s, for what it proves: "nothing lost" only means something over several
 * lease periods (two per test, 2.4 s each, besides the moved slots' settling period and the
 * paused master's lease running out), and 3,000 leases are what make a master's batches more
 * than one script call per tick. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "cluster_fixture.h"
#include "core_call.h"
#include "harness.h"
#include "topology_util.h"

#define LOCKS 3000
#define WATCHDOG_MS 2400
#define RENEW_BATCH 100
#define MASTERS 3

static cluster_fixture *fx;

static int group_setup(void **state) {
    (void)state;
    test_watchdog_arm(180, "test_cluster_renew");
    if (cluster_fixture_start(NULL, &fx) != 0)
        return -1;
    for (int i = 0; i < CLUSTER_FIXTURE_NODES; i++) {
        redis_fixture *n = cluster_fixture_node(fx, i);
        redisReply *a = redis_fixture_cmd(n, "CONFIG SET cluster-replica-no-failover yes");
        redisReply *b = redis_fixture_cmd(n, "CONFIG SET cluster-require-full-coverage no");
        bool ok = a && b && a->type == REDIS_REPLY_STATUS && b->type == REDIS_REPLY_STATUS;
        freeReplyObject(a);
        freeReplyObject(b);
        if (!ok)
            return -1;
    }
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    cluster_fixture_stop(fx);
    test_watchdog_disarm();
    return 0;
}

/* ---- 3,000 watchdog locks and where they are ---------------------------------------------- */

typedef struct held_locks {
    dlock_client *c;
    dlock_lock *locks[LOCKS];
    _Atomic int lost[LOCKS]; /* the lost callback's count, per lock */
    int node_of[LOCKS];      /* the fixture's index of the master that keeps the lock */
    int masters[MASTERS];    /* the fixture's indexes of the three masters */
    int leases_on[MASTERS];  /* locks per master */
} held_locks;

static held_locks held;

static void on_lost(dlock_lock *l, uint64_t owner, int reason, void *arg) {
    (void)l, (void)owner, (void)reason;
    atomic_fetch_add((_Atomic int *)arg, 1);
}

static int master_index(const held_locks *h, int node) {
    for (int m = 0; m < MASTERS; m++)
        if (h->masters[m] == node)
            return m;
    return -1;
}

/* The master of every lock's slot (asked once per slot), and the masters in order of first
 * sight. */
static void locate(held_locks *h, const char *tag) {
    static int node_of_slot[DLOCK__CLUSTER_SLOTS];
    for (int s = 0; s < DLOCK__CLUSTER_SLOTS; s++)
        node_of_slot[s] = -1;
    for (int m = 0; m < MASTERS; m++)
        h->masters[m] = -1;
    for (int i = 0; i < LOCKS; i++) {
        char name[48];
        snprintf(name, sizeof(name), "renew-%s-%d", tag, i);
        int slot = dlock__slot_of(name, strlen(name));
        if (node_of_slot[slot] < 0)
            node_of_slot[slot] = cluster_fixture_node_of_slot(fx, slot);
        int node = node_of_slot[slot];
        assert_true(node >= 0);
        h->node_of[i] = node;
        int m = master_index(h, node);
        for (int k = 0; m < 0 && k < MASTERS; k++)
            if (h->masters[k] < 0) {
                h->masters[k] = node;
                m = k;
            }
        assert_true(m >= 0);
        h->leases_on[m]++;
    }
    for (int m = 0; m < MASTERS; m++)
        assert_true(h->leases_on[m] > 0);
}

/* A client of the whole cluster and LOCKS locks named renew-<tag>-<i>, each taken with
 * DLOCK_WATCHDOG. */
static held_locks *hold_all(const char *tag) {
    held_locks *h = &held;
    memset(h, 0, sizeof(*h));
    locate(h, tag);
    char *url = topo_asprintf("redis-cluster://%s", cluster_fixture_hosts(fx));
    dlock_options o;
    dlock_options_init(&o);
    o.url = url;
    o.watchdog_ms = WATCHDOG_MS;
    o.renew_batch = RENEW_BATCH;
    int rc = dlock_client_new(&o, &h->c);
    free(url);
    if (rc != DLOCK_OK)
        fail_msg("dlock_client_new: %s: %s", dlock_strerror(rc), dlock_last_error());
    for (int i = 0; i < LOCKS; i++) {
        char name[48];
        snprintf(name, sizeof(name), "renew-%s-%d", tag, i);
        ASSERT_OK(dlock_lock_new(h->c, name, &h->locks[i]));
        ASSERT_OK(dlock_lock_on_lost(h->locks[i], on_lost, &h->lost[i]));
        ASSERT_OK(dlock_lock_acquire(h->locks[i], DLOCK_WATCHDOG));
    }
    return h;
}

/* Every test's teardown, also after a failed assert: the client goes, and with it every
 * lost callback that could count into the next test's locks. */
static int teardown_client(void **state) {
    (void)state;
    held_locks *h = &held;
    for (int i = 0; i < LOCKS; i++)
        dlock_lock_free(h->locks[i]);
    dlock_client_free(h->c);
    memset(h->locks, 0, sizeof(h->locks));
    h->c = NULL;
    return 0;
}

/* Locks kept by master m (or by every other master: others) reported lost. */
static int lost_on(held_locks *h, int m, bool others) {
    int n = 0;
    for (int i = 0; i < LOCKS; i++)
        if ((h->node_of[i] == h->masters[m]) != others)
            n += atomic_load(&h->lost[i]) > 0;
    return n;
}

/* Locks kept by master m (or by every other master: others) whose key has no TTL left. */
static int expired_on(held_locks *h, int m, bool others) {
    int n = 0;
    for (int i = 0; i < LOCKS; i++)
        if ((h->node_of[i] == h->masters[m]) != others &&
            redis_fixture_int(cluster_fixture_node(fx, h->node_of[i]), "PTTL %s",
                              dlock_lock_name(h->locks[i])) <= 0)
            n++;
    return n;
}

/* ---- the watchdog's ticks and the masters' script calls ----------------------------------- */

typedef struct tick_state {
    uint64_t ticks;
    bool settled; /* every renewal call sent so far has its answer */
} tick_state;

static void read_ticks(dlock_client *c, void *arg) {
    tick_state *t = arg;
    t->ticks = DLOCK__ENGINE(c)->renew.ticks;
    t->settled = DLOCK__ENGINE(c)->renew.renew_answers == DLOCK__ENGINE(c)->renew.renew_calls;
}

static tick_state ticks_of(dlock_client *c) {
    tick_state t;
    on_loop(c, read_ticks, &t);
    return t;
}

/* Every master's EVALSHA calls, read between two reads of the watchdog that agree and find
 * every renewal answered: each master has then run every call of every tick up to *ticks,
 * and none of a later one. How busy the machine is changes when that moment comes, not what
 * is counted. */
static void evalsha_calls(held_locks *h, uint64_t *ticks, long long calls[MASTERS]) {
    int64_t until = test_now_ms() + test_slack_ms(20 * WATCHDOG_MS);
    for (;;) {
        assert_true(test_now_ms() < until);
        tick_state before = ticks_of(h->c);
        if (!before.settled) {
            test_sleep_ms(5);
            continue;
        }
        for (int m = 0; m < MASTERS; m++)
            calls[m] = redis_fixture_info_int(cluster_fixture_node(fx, h->masters[m]),
                                              "commandstats", "cmdstat_evalsha.calls");
        tick_state after = ticks_of(h->c);
        *ticks = after.ticks;
        if (after.ticks == before.ticks && after.settled)
            return;
    }
}

/* ---- tests -------------------------------------------------------------------------------- */

/* Waits for `ticks` more ticks (bounded) and checks that each master's script calls in them
 * are ceil(its leases / renew_batch) per tick. */
static void each_master_gets_its_batches(held_locks *h, uint64_t ticks_wanted) {
    uint64_t t0, t1;
    long long c0[MASTERS], c1[MASTERS];
    evalsha_calls(h, &t0, c0);
    int64_t until = test_now_ms() + test_slack_ms((int64_t)(ticks_wanted + 3) * WATCHDOG_MS);
    while (ticks_of(h->c).ticks < t0 + ticks_wanted) {
        assert_true(test_now_ms() < until);
        test_sleep_ms(20);
    }
    evalsha_calls(h, &t1, c1);
    long long ticks = (long long)(t1 - t0);
    for (int m = 0; m < MASTERS; m++) {
        long long per_tick = (h->leases_on[m] + RENEW_BATCH - 1) / RENEW_BATCH;
        long long calls = c1[m] - c0[m];
        printf("# master %d: %d leases, %lld script calls in %lld ticks (%lld per tick "
               "expected)\n",
               h->masters[m], h->leases_on[m], calls, ticks, per_tick);
        /* both reads were settled: each tick's batches and nothing else, but for a batch
         * a moved slot made the master refuse, whose leases then go one by one */
        assert_true(calls >= ticks * per_tick);
        assert_true(calls <= (ticks + 1) * per_tick);
    }
}

static void nothing_lost_or_expired(held_locks *h) {
    for (int m = 0; m < MASTERS; m++) {
        assert_int_equal(lost_on(h, m, false), 0);
        assert_int_equal(expired_on(h, m, false), 0);
    }
}

static void release_all(held_locks *h) {
    for (int i = 0; i < LOCKS; i++)
        ASSERT_OK(dlock_lock_release(h->locks[i]));
}

static void test_each_master_renews_its_own_leases_in_batches_and_none_is_lost(void **state) {
    (void)state;
    held_locks *h = hold_all("batches");
    each_master_gets_its_batches(h, 6); /* two lease periods */
    nothing_lost_or_expired(h);
    release_all(h);
}

/* Moves the slots of the first `slots` locks of master `from` to master `to` while they are
 * held: the batches already grouped by the old map are refused, their leases renewed one by
 * one, and the next ticks group them by the new owner. */
static void test_slots_moved_under_held_leases_keep_them_and_batches_follow(void **state) {
    (void)state;
    held_locks *h = hold_all("moved");
    int from = 0, to = 1, slots = 5;
    for (int i = 0; i < LOCKS && slots > 0; i++) {
        if (h->node_of[i] != h->masters[from])
            continue;
        const char *name = dlock_lock_name(h->locks[i]);
        int slot = dlock__slot_of(name, strlen(name));
        assert_int_equal(cluster_fixture_migrate_slot(fx, slot, h->masters[to]), 0);
        for (int k = 0; k < LOCKS; k++) {
            const char *other = dlock_lock_name(h->locks[k]);
            if (dlock__slot_of(other, strlen(other)) == slot) {
                h->node_of[k] = h->masters[to];
                h->leases_on[from]--;
                h->leases_on[to]++;
            }
        }
        slots--;
    }
    /* a lease period to settle on the new map, then three more counted */
    int64_t moved_at = test_now_ms();
    while (test_now_ms() - moved_at < WATCHDOG_MS)
        test_sleep_ms(50);
    each_master_gets_its_batches(h, 6);
    nothing_lost_or_expired(h);
    release_all(h);
}

static void test_a_master_lost_longer_than_the_lease_loses_its_leases_only(void **state) {
    (void)state;
    held_locks *h = hold_all("paused");
    int m = 1; /* the master that stops answering */
    redis_fixture *paused = cluster_fixture_node(fx, h->masters[m]);
    assert_int_equal(redis_fixture_pause(paused), 0);
    bool ok = false;
    POLL_UNTIL(ok, lost_on(h, m, false) == h->leases_on[m], test_slack_ms(2 * WATCHDOG_MS));
    int lost_here = lost_on(h, m, false);
    /* another lease period: the other masters' leases are still renewed */
    int64_t lost_at = test_now_ms();
    while (test_now_ms() - lost_at < WATCHDOG_MS)
        test_sleep_ms(50);
    int lost_elsewhere = lost_on(h, m, true), expired_elsewhere = expired_on(h, m, true);
    assert_int_equal(redis_fixture_resume(paused), 0);
    printf("# master %d paused: %d of its %d leases lost; elsewhere %d lost, %d expired\n",
           h->masters[m], lost_here, h->leases_on[m], lost_elsewhere, expired_elsewhere);
    assert_true(ok);
    assert_int_equal(lost_elsewhere, 0);
    assert_int_equal(expired_elsewhere, 0);
    for (int i = 0; i < LOCKS; i++)
        if (h->node_of[i] != h->masters[m])
            ASSERT_OK(dlock_lock_release(h->locks[i]));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(
            test_each_master_renews_its_own_leases_in_batches_and_none_is_lost, teardown_client),
        cmocka_unit_test_teardown(test_slots_moved_under_held_leases_keep_them_and_batches_follow,
                                  teardown_client),
        cmocka_unit_test_teardown(test_a_master_lost_longer_than_the_lease_loses_its_leases_only,
                                  teardown_client),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
