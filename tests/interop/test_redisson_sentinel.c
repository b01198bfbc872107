/* SPDX-License-Identifier: MIT */
/* test_redisson_sentinel.c — dlock and the real Redisson 3.52.0 client on one master
 * watched by Sentinel (sentinel_fixture.h: 1 master + 1 replica + 3 sentinels), both given
 * the same redis-sentinel:// URL (redisson-cli --url takes dlock's form), on the same names.
 *
 * Proven (the scenes of redisson_topology.h): a Redisson lock keeps dlock out, and dlock's
 * waiter, subscribed on the master the sentinels name, is woken by Redisson's unlock; a
 * dlock lock keeps a Redisson tryLock out and dlock's release wakes it; a semaphore's
 * permits keep each other's acquirers out both ways, each release wakes the other side's
 * waiter, and the permits come back exactly; a Redisson `loop` and two dlock threads taking
 * the lock in turn never find each other inside (rounds counted on a referee server of
 * their own). Both clients wait for the replica on their
 * writes (dlock's sync_replicas=auto, Redisson's synced-slaves check): the replica is up.
 *
 * It takes 25-35 s alone and up to 90 s beside other tests: every scene starts a JVM (a
 * Redisson client cannot be asked twice from one redisson-cli run), and the fixture is five servers
 * (a master, a replica, three sentinels).
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

#include "dlock.h"
#include "harness.h"
#include "redisson_peer.h"
#include "redisson_topology.h"
#include "sentinel_fixture.h"

#define BUDGET_S 240

static sentinel_fixture *fx;
static dlock_client *client;
static rj_topology topo;

static bool master_subscribed(void *arg, const char *name) {
    (void)arg;
    redis_fixture *master = sentinel_fixture_node(fx, sentinel_fixture_master_index(fx));
    char pattern[128];
    snprintf(pattern, sizeof(pattern), "*{%s}*", name);
    return master && subscribed_channels_matching(master, pattern) > 0;
}

static int group_setup(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, "test_redisson_sentinel");
    if (sentinel_fixture_start(NULL, &fx) != 0)
        return -1;
    client = connect_client_cfg(NULL, (test_client_cfg){.url = sentinel_fixture_url(fx)});
    static const char *where[3];
    where[0] = "--url";
    where[1] = sentinel_fixture_url(fx);
    where[2] = NULL;
    topo = (rj_topology){.c = client,
                         .dir = redis_fixture_dir(sentinel_fixture_node(fx, 0)),
                         .where = where,
                         .subscribed = master_subscribed};
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    dlock_client_free(client);
    sentinel_fixture_stop(fx);
    test_watchdog_disarm();
    return 0;
}

static void test_redisson_lock_keeps_dlock_out_and_its_unlock_wakes_dlocks_waiter(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    topo_redisson_holds_dlock_waits(&topo, "se-java-holds");
}

static void test_dlock_lock_keeps_redisson_out_and_its_release_wakes_redisson(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    topo_dlock_holds_redisson_waits(&topo, "se-dlock-holds");
}

static void test_semaphore_permits_keep_each_side_out_and_releases_wake_the_other(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    topo_semaphore_both_ways(&topo, "se-sem");
}

static void test_fair_lock_keeps_each_side_out_and_each_release_wakes_the_other(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    topo_fairlock_both_ways(&topo, "se-fair");
}

static void test_lock_rounds_of_redisson_and_dlock_never_overlap_and_all_count(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    topo_lock_rounds_never_overlap(&topo, "se-rounds");
}

int main(void) {
    if (redisson_absent())
        return REDISSON_SKIPPED;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_redisson_lock_keeps_dlock_out_and_its_unlock_wakes_dlocks_waiter),
        cmocka_unit_test(test_dlock_lock_keeps_redisson_out_and_its_release_wakes_redisson),
        cmocka_unit_test(test_semaphore_permits_keep_each_side_out_and_releases_wake_the_other),
        cmocka_unit_test(test_fair_lock_keeps_each_side_out_and_each_release_wakes_the_other),
        cmocka_unit_test(test_lock_rounds_of_redisson_and_dlock_never_overlap_and_all_count),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
