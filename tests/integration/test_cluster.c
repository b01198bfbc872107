/* SPDX-License-Identifier: MIT */
/* test_cluster.c — a client of a redis-cluster:// URL: any one reachable seed is enough, each
 * object goes to the master of its slot, and a lock works on names spread over all three
 * masters. One 6-node cluster for the whole file; no test here changes which node serves
 * which slot (resharding and failover: tests/fault/test_cluster_*.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cluster_fixture.h"
#include "dlock_int.h"
#include "harness.h"
#include "topology_util.h"

static cluster_fixture *fx;

static int group_setup(void **state) {
    (void)state;
    test_watchdog_arm(120, "test_cluster");
    return cluster_fixture_start(NULL, &fx);
}

static int group_teardown(void **state) {
    (void)state;
    cluster_fixture_stop(fx);
    test_watchdog_disarm();
    return 0;
}

static dlock_client *cluster_client(const char *hosts) {
    char *url = topo_asprintf("redis-cluster://%s", hosts);
    dlock_options o;
    dlock_options_init(&o);
    o.url = url;
    dlock_client *c = NULL;
    int rc = dlock_client_new(&o, &c);
    free(url);
    if (rc != DLOCK_OK)
        fail_msg("dlock_client_new: %s: %s", dlock_strerror(rc), dlock_last_error());
    return c;
}

/* A name for each master: names whose slots the three masters serve. */
static void names_on_every_master(char names[3][32]) {
    int found = 0, masters[3] = {-1, -1, -1};
    for (int i = 0; found < 3 && i < 10000; i++) {
        char name[32];
        snprintf(name, sizeof(name), "job-%d", i);
        int node = cluster_fixture_node_of_slot(fx, cluster_fixture_slot_of_key(fx, name));
        bool seen = false;
        for (int k = 0; k < found; k++)
            seen |= masters[k] == node;
        if (!seen && node >= 0) {
            masters[found] = node;
            snprintf(names[found++], 32, "%s", name);
        }
    }
    assert_int_equal(found, 3);
}

static void test_one_seed_of_many_is_enough_and_locks_work_on_every_master(void **state) {
    (void)state;
    /* an unreachable seed first: the next one answers */
    char *hosts = topo_asprintf("127.0.0.1:1,%s", cluster_fixture_hosts(fx));
    dlock_client *c = cluster_client(hosts);
    free(hosts);
    char names[3][32];
    names_on_every_master(names);
    for (int i = 0; i < 3; i++) {
        dlock_lock *l;
        ASSERT_OK(dlock_lock_new(c, names[i], &l));
        ASSERT_OK(dlock_lock_acquire(l, 10000));
        int node = cluster_fixture_node_of_slot(fx, cluster_fixture_slot_of_key(fx, names[i]));
        redisReply *r = redis_fixture_cmd(cluster_fixture_node(fx, node), "EXISTS %s", names[i]);
        assert_non_null(r);
        assert_int_equal(r->integer, 1); /* kept by the master of its slot */
        freeReplyObject(r);
        ASSERT_OK(dlock_lock_release(l));
        dlock_lock_free(l);
    }
    dlock_client_free(c);
}

/* dlock_stats' reconnects counts the command connection of every master (and each shard's
 * subscriber), not only the first node's. */
static void test_reconnects_count_the_connection_of_every_master(void **state) {
    (void)state;
    dlock_client *c = cluster_client(cluster_fixture_hosts(fx));
    char names[3][32];
    names_on_every_master(names);
    dlock_lock *l[3];
    for (int i = 0; i < 3; i++) { /* a command connection to each master */
        ASSERT_OK(dlock_lock_new(c, names[i], &l[i]));
        ASSERT_OK(dlock_lock_acquire(l[i], 10000));
        ASSERT_OK(dlock_lock_release(l[i]));
    }
    dlock_stats s;
    dlock_stats_init(&s);
    ASSERT_OK(dlock_client_stats(c, &s));
    assert_int_equal(s.reconnects, 0);
    int killed = 0;
    for (int i = 0; i < 6; i++)
        if (cluster_fixture_is_master(fx, i))
            killed += redis_fixture_client_kill_type(cluster_fixture_node(fx, i), "normal");
    assert_true(killed >= 3);
    for (int i = 0; i < 3; i++) { /* every master is reached again */
        ASSERT_OK(dlock_lock_acquire(l[i], 10000));
        ASSERT_OK(dlock_lock_release(l[i]));
        dlock_lock_free(l[i]);
    }
    ASSERT_OK(dlock_client_stats(c, &s));
    printf("# %d connections killed on the masters: %llu reconnects\n", killed,
           (unsigned long long)s.reconnects);
    assert_true(s.reconnects >= 3);
    dlock_client_free(c);
}

static void test_no_seed_reachable_is_econn(void **state) {
    (void)state;
    dlock_options o;
    dlock_options_init(&o);
    o.url = "redis-cluster://127.0.0.1:1,127.0.0.1:2";
    o.connect_timeout_ms = 2000;
    dlock_client *c = NULL;
    assert_int_equal(dlock_client_new(&o, &c), DLOCK_ECONN);
    assert_null(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_seed_of_many_is_enough_and_locks_work_on_every_master),
        cmocka_unit_test(test_reconnects_count_the_connection_of_every_master),
        cmocka_unit_test(test_no_seed_reachable_is_econn),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
