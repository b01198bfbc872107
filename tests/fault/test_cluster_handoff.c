/* SPDX-License-Identifier: MIT */
/* test_cluster_handoff.c — the reentrant lock's hand-off (src/lock/acquire.lua, release.lua)
 * through a redis-cluster:// client, and what it does while the lock's slot is migrated
 * (src/lock/handoff_cluster.c):
 *   - a waiter joins the queue {N}:handoff_queue on N's master, and a release hands it the
 *     lock; the queue is gone once nobody waits; a fenced lock's too (its token counter is
 *     the one other key the scripts declare), with the next token;
 *   - a release promises the free lock to the queue's first waiter (the marker {N}:handoff),
 *     and a newcomer is refused while the promise stands: the bound on a wait holds in a
 *     Cluster too;
 *   - while N's slot is half-moved (N itself already on the new master, the queue still on
 *     the old), a waiter's attempts that the old master sends on with ASK write no hand-off
 *     key on the new master, so MIGRATE of the queue finds no key in its way (BUSYKEY) and
 *     the migration finishes with the first waiter's place kept; after it both waiters get the
 *     lock.
 * One 6-node cluster for the file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "topology/cluster.h"
#include "cluster_load.h"
#include "core_call.h"
#include "stats_helpers.h"

#define LEASE_MS 60000
#define WAIT_MS 60000

static cluster_fixture *fx; /* the group's, set by each test */

static int slot_of(const char *name) {
    return dlock__slot_of(name, strlen(name));
}

/* The master serving name's slot, for admin commands on N's keys. */
static redis_fixture *master_of(const char *name) {
    return cluster_fixture_node(fx, cluster_fixture_node_of_slot(fx, slot_of(name)));
}

/* "{name}:part", the hand-off's key names for a name without braces. */
static void key_of(const char *name, const char *part, char *buf, size_t size) {
    snprintf(buf, size, "{%s}:%s", name, part);
}

static int wait_for_lock(void *arg) {
    return dlock_lock_try_acquire(arg, WAIT_MS, LEASE_MS);
}

/* The wait, then its release on the same thread (the same owner). */
static int wait_then_release(void *arg) {
    int rc = wait_for_lock(arg);
    return rc == DLOCK_OK ? dlock_lock_release(arg) : rc;
}

/* Fails naming the keys of slot on node unless it holds exactly n of them. */
static void slot_holds(redis_fixture *node, int slot, long long n) {
    long long have = redis_fixture_int(node, "CLUSTER COUNTKEYSINSLOT %d", slot);
    if (have == n)
        return;
    redisReply *r = redis_fixture_cmd(node, "CLUSTER GETKEYSINSLOT %d 10", slot);
    char keys[512] = "";
    for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        size_t used = strlen(keys);
        snprintf(keys + used, sizeof(keys) - used, " %s", r->element[i]->str);
    }
    if (r)
        freeReplyObject(r);
    fail_msg("slot %d holds %lld keys, not %lld:%s", slot, have, n, keys);
}

/* The owner field first in the queue on node (the caller frees it); fails if none. */
static char *first_in_line(redis_fixture *node, const char *queue) {
    redisReply *r = redis_fixture_cmd(node, "ZRANGE %s 0 0", queue);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 1);
    char *field = strdup(r->element[0]->str);
    freeReplyObject(r);
    assert_non_null(field);
    return field;
}

/* Polls until the queue on node holds n waiters. */
static void queue_holds(redis_fixture *node, const char *queue, long long n) {
    bool ok = false;
    POLL_UNTIL(ok, redis_fixture_int(node, "ZCARD %s", queue) == n, slack_ms(5000));
    if (!ok)
        fail_msg("%s never held %lld waiters", queue, n);
}

static void test_a_waiter_joins_the_queue_on_the_locks_master_and_gets_the_lock(void **state) {
    fx = *state;
    int masters[3];
    cluster_masters(fx, masters);
    char name[CLUSTER_NAME_MAX], queue[96];
    cluster_name_on(fx, "line", masters[1], name, sizeof(name));
    key_of(name, "handoff_queue", queue, sizeof(queue));
    redis_fixture *node = master_of(name);
    dlock_client *a = cluster_client(fx, (test_client_cfg){0});
    dlock_client *b = cluster_client(fx, (test_client_cfg){0});
    dlock_lock *la, *lb;
    ASSERT_OK(dlock_lock_new(a, name, &la));
    ASSERT_OK(dlock_lock_new(b, name, &lb));
    ASSERT_OK(dlock_lock_acquire(la, LEASE_MS));

    blocking_call waiter;
    blocking_call_start(&waiter, wait_then_release, lb);
    queue_holds(node, queue, 1);
    ASSERT_OK(dlock_lock_release(la));
    ASSERT_OK(blocking_call_join(&waiter));
    assert_int_equal(redis_fixture_int(node, "EXISTS %s %s", queue, name), 0);

    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
}

/* A fenced lock's waiter (the token counter declared, marker and queue not): the token it
 * got, then its release. */
typedef struct fenced_waiter {
    dlock_lock *l;
    uint64_t token;
} fenced_waiter;

static int wait_for_token(void *arg) {
    fenced_waiter *w = arg;
    int rc = wait_for_lock(w->l);
    if (rc == DLOCK_OK)
        rc = dlock_lock_token(w->l, &w->token);
    return rc == DLOCK_OK ? dlock_lock_release(w->l) : rc;
}

static void test_a_fenced_locks_waiter_queues_and_gets_the_next_token(void **state) {
    fx = *state;
    int masters[3];
    cluster_masters(fx, masters);
    char name[CLUSTER_NAME_MAX], queue[96];
    cluster_name_on(fx, "fenced", masters[0], name, sizeof(name));
    key_of(name, "handoff_queue", queue, sizeof(queue));
    redis_fixture *node = master_of(name);
    dlock_client *a = cluster_client(fx, (test_client_cfg){0});
    dlock_client *b = cluster_client(fx, (test_client_cfg){0});
    dlock_lock *la, *lb;
    ASSERT_OK(dlock_fencedlock_new(a, name, &la));
    ASSERT_OK(dlock_fencedlock_new(b, name, &lb));
    ASSERT_OK(dlock_lock_acquire(la, LEASE_MS));
    uint64_t token = 0;
    ASSERT_OK(dlock_lock_token(la, &token));
    assert_int_equal(token, 1);

    blocking_call waiter;
    fenced_waiter fw = {.l = lb};
    blocking_call_start(&waiter, wait_for_token, &fw);
    queue_holds(node, queue, 1);
    ASSERT_OK(dlock_lock_release(la));
    ASSERT_OK(blocking_call_join(&waiter));
    assert_int_equal(fw.token, 2);
    assert_int_equal(redis_fixture_int(node, "EXISTS %s %s", queue, name), 0);

    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
}

static void test_a_release_promises_the_first_waiter_the_lock_and_refuses_a_newcomer(void **state) {
    fx = *state;
    int masters[3];
    cluster_masters(fx, masters);
    char name[CLUSTER_NAME_MAX], queue[96], marker[96];
    cluster_name_on(fx, "promise", masters[2], name, sizeof(name));
    key_of(name, "handoff_queue", queue, sizeof(queue));
    key_of(name, "handoff", marker, sizeof(marker));
    redis_fixture *node = master_of(name);
    dlock_client *a = cluster_client(fx, (test_client_cfg){0});
    dlock_lock *la;
    ASSERT_OK(dlock_lock_new(a, name, &la));
    /* a waiter that joined long ago (the server's clock at 1 s past the epoch): past the
     * bound, so the release promises it the lock */
    assert_int_equal(redis_fixture_int(node, "ZADD %s 1000 old:1", queue), 1);
    ASSERT_OK(dlock_lock_acquire(la, LEASE_MS));
    ASSERT_OK(dlock_lock_release(la));

    char *promised = redis_fixture_str(node, "GET %s", marker);
    assert_non_null(promised);
    assert_string_equal(promised, "old:1");
    free(promised);
    assert_int_equal(redis_fixture_int(node, "PEXPIRE %s 60000", marker), 1); /* stands */
    ASSERT_RC(dlock_lock_try_acquire(la, 0, LEASE_MS), DLOCK_ETIMEDOUT);
    assert_int_equal(redis_fixture_int(node, "EXISTS %s", name), 0); /* free, yet refused */
    assert_int_equal(redis_fixture_int(node, "DEL %s", marker), 1);  /* as if it lapsed */
    ASSERT_OK(dlock_lock_try_acquire(la, 0, LEASE_MS));
    ASSERT_OK(dlock_lock_release(la));

    dlock_lock_free(la);
    dlock_client_free(a);
}

static void
test_a_half_moved_slot_gets_no_handoff_key_on_its_new_master_and_moves_on(void **state) {
    fx = *state;
    int masters[3];
    cluster_masters(fx, masters);
    char name[CLUSTER_NAME_MAX], queue[96];
    cluster_name_on(fx, "moving", masters[0], name, sizeof(name));
    key_of(name, "handoff_queue", queue, sizeof(queue));
    int slot = slot_of(name), from = cluster_fixture_node_of_slot(fx, slot),
        to = cluster_next_master(masters, from);
    redis_fixture *old_node = cluster_fixture_node(fx, from),
                  *new_node = cluster_fixture_node(fx, to);
    dlock_client *a = cluster_client(fx, (test_client_cfg){0});
    dlock_client *b = cluster_client(fx, (test_client_cfg){0});
    dlock_client *c = cluster_client(fx, (test_client_cfg){0});
    dlock_lock *la, *lb, *lc;
    ASSERT_OK(dlock_lock_new(a, name, &la));
    ASSERT_OK(dlock_lock_new(b, name, &lb));
    ASSERT_OK(dlock_lock_new(c, name, &lc));
    ASSERT_OK(dlock_lock_acquire(la, LEASE_MS));
    blocking_call waiter_b, waiter_c;
    blocking_call_start(&waiter_b, wait_then_release, lb);
    queue_holds(old_node, queue, 1);

    /* the slot half-moved: N (held) on the new master, the queue still on the old one */
    assert_int_equal(cluster_fixture_migrate_slot_begin(fx, slot, to), 0);
    redisReply *r = redis_fixture_cmd(old_node, "MIGRATE 127.0.0.1 %d %s 0 5000",
                                      cluster_fixture_port(fx, to), name);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    slot_holds(new_node, slot, 1);

    /* c's attempt: the old master lacks N and sends it on (ASK); the new one finds N held.
     * c subscribes only once that busy answer is in. */
    blocking_call_start(&waiter_c, wait_then_release, lc);
    POLL_STAT(c, subscriptions, v >= 1);
    slot_holds(new_node, slot, 1); /* N */
    slot_holds(old_node, slot, 1); /* the queue */

    /* MIGRATE of the queue finds no copy on the new master (BUSYKEY would fail it), and b
     * keeps its place. (c may join the moved queue at once: its slot's new master ends its
     * shard subscription, and its next attempt finds no migration.) */
    char *first = first_in_line(old_node, queue);
    char *joined = redis_fixture_str(old_node, "ZSCORE %s %s", queue, first);
    assert_int_equal(cluster_fixture_migrate_slot_finish(fx, slot, to), 0);
    char *moved = redis_fixture_str(new_node, "ZSCORE %s %s", queue, first);
    assert_non_null(moved);
    assert_string_equal(moved, joined);
    free(first);
    free(joined);
    free(moved);
    ASSERT_OK(dlock_lock_release(la));
    ASSERT_OK(blocking_call_join(&waiter_b));
    ASSERT_OK(blocking_call_join(&waiter_c));

    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_lock_free(lc);
    dlock_client_free(a);
    dlock_client_free(b);
    dlock_client_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_waiter_joins_the_queue_on_the_locks_master_and_gets_the_lock),
        cmocka_unit_test(test_a_fenced_locks_waiter_queues_and_gets_the_next_token),
        cmocka_unit_test(test_a_release_promises_the_first_waiter_the_lock_and_refuses_a_newcomer),
        cmocka_unit_test(test_a_half_moved_slot_gets_no_handoff_key_on_its_new_master_and_moves_on),
    };
    return cmocka_run_group_tests(tests, cluster_group_setup, cluster_group_teardown);
}
