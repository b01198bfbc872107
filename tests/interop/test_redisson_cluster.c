/* SPDX-License-Identifier: MIT */
/* test_redisson_cluster.c — dlock and the real Redisson 3.52.0 client (redisson-cli
 * --cluster) on one 6-node Redis Cluster (cluster_fixture.h), on the same names.
 *
 * Proven (the scenes of redisson_topology.h): a Redisson lock keeps dlock out, and dlock's
 * waiter, subscribed with SSUBSCRIBE on the master of the name's slot (sharded pub/sub,
 * PUBSUB SHARDCHANNELS), is woken by Redisson's unlock (its SPUBLISH); a dlock lock keeps a
 * Redisson tryLock out and dlock's release wakes it; a semaphore's permits keep each other's
 * acquirers out both ways, each release wakes the other side's waiter, and the permits come
 * back exactly; and a Redisson `loop` and two dlock threads taking the lock in turn never
 * find each other inside (rounds counted on a referee server of their own). The names are spread so
 * that the scenes run on different masters.
 *
 * It takes 25-35 s alone and up to 90 s beside other tests: every scene starts a JVM (a
 * Redisson client cannot be asked twice from one redisson-cli run), and the fixture is a 6-node
 * cluster.
 *
 * Skipped (exit 77, the reason printed) without $DLOCK_REDISSON_CLI. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cluster_fixture.h"
#include "dlock.h"
#include "harness.h"
#include "redisson_peer.h"
#include "redisson_topology.h"
#include "topology_util.h"

#define BUDGET_S 240

static cluster_fixture *fx;
static dlock_client *client;
static rj_topology topo;

static bool shard_subscribed(void *arg, const char *name) {
    (void)arg;
    return cluster_fixture_shard_subscribed(fx, cluster_fixture_node_of_key(fx, name), name);
}

static int group_setup(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, "test_redisson_cluster");
    if (cluster_fixture_start(NULL, &fx) != 0)
        return -1;
    char *url = topo_asprintf("redis-cluster://%s", cluster_fixture_hosts(fx));
    client = connect_client_cfg(NULL, (test_client_cfg){.url = url});
    free(url);
    static const char *where[3];
    where[0] = "--cluster";
    where[1] = cluster_fixture_hosts(fx);
    where[2] = NULL;
    topo = (rj_topology){.c = client,
                         .dir = redis_fixture_dir(cluster_fixture_node(fx, 0)),
                         .where = where,
                         .subscribed = shard_subscribed};
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    dlock_client_free(client);
    cluster_fixture_stop(fx);
    test_watchdog_disarm();
    return 0;
}

static void
test_redisson_lock_keeps_dlock_out_and_its_sharded_unlock_wakes_dlocks_waiter(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    topo_redisson_holds_dlock_waits(&topo, "cl-java-holds");
}

static void test_dlock_lock_keeps_redisson_out_and_its_release_wakes_redisson(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    topo_dlock_holds_redisson_waits(&topo, "cl-dlock-holds");
}

static void test_semaphore_permits_keep_each_side_out_and_releases_wake_the_other(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    topo_semaphore_both_ways(&topo, "cl-sem");
}

static void test_fair_lock_keeps_each_side_out_and_each_release_wakes_the_other(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    topo_fairlock_both_ways(&topo, "cl-fair");
}

static void test_lock_rounds_of_redisson_and_dlock_never_overlap_and_all_count(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    topo_lock_rounds_never_overlap(&topo, "cl-rounds");
}

int main(void) {
    if (redisson_absent())
        return REDISSON_SKIPPED;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_redisson_lock_keeps_dlock_out_and_its_sharded_unlock_wakes_dlocks_waiter),
        cmocka_unit_test(test_dlock_lock_keeps_redisson_out_and_its_release_wakes_redisson),
        cmocka_unit_test(test_semaphore_permits_keep_each_side_out_and_releases_wake_the_other),
        cmocka_unit_test(test_fair_lock_keeps_each_side_out_and_each_release_wakes_the_other),
        cmocka_unit_test(test_lock_rounds_of_redisson_and_dlock_never_overlap_and_all_count),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
