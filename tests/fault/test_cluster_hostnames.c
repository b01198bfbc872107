/* SPDX-License-Identifier: MIT */
/* test_cluster_hostnames.c — a real 6-node cluster in Redis 7's hostname mode
 * (cluster-preferred-endpoint-type hostname), each node announcing a host name of 250 to
 * 255 bytes (255: the most Redis and DNS take). CLUSTER SLOTS and MOVED name the nodes by
 * those names; a redis-cluster:// client works on every master, names each whole, and
 * follows a slot that moved.
 *
 * The names must resolve without a DNS server or /etc/hosts: glibc's getaddrinfo reads a
 * dotted number with a leading 0 as octal, so "000...000177.0.0.1" (any number of zeros) is
 * 127.0.0.1, and node i announces 246 - i zeros: six distinct names, one address. (Names were
 * cut at 80 bytes, so the six masters' names became one node; a MOVED naming a host of 64
 * bytes or more was dropped.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "client_node.h"
#include "topology/cluster.h"
#include "cluster_fixture.h"
#include "cluster_load.h"
#include "dlock.h"
#include "harness.h"
#include "test_util.h"

/* node i's name: 246 - i zeros then "177.0.0.1", 255 - i bytes (Redis takes up to 255) */
#define ZEROS 240

static cluster_fixture *fx;

static void host_name_of(int node, char *buf, size_t size) {
    int zeros = 246 - node;
    assert_true((size_t)zeros + 10 < size);
    memset(buf, '0', (size_t)zeros);
    snprintf(buf + zeros, size - (size_t)zeros, "177.0.0.1");
}

static void node_config(int node, const char *name, const char *value) {
    redisReply *r =
        redis_fixture_cmd(cluster_fixture_node(fx, node), "CONFIG SET %s %s", name, value);
    if (!r || r->type == REDIS_REPLY_ERROR)
        fail_msg("node %d: CONFIG SET %s: %s", node, name, r ? r->str : "no reply");
    freeReplyObject(r);
}

/* Whether every master entry of node's CLUSTER SLOTS names its host by a long name. */
static bool slots_name_hosts(int node) {
    redisReply *r = redis_fixture_cmd(cluster_fixture_node(fx, node), "CLUSTER SLOTS");
    bool all = r && r->type == REDIS_REPLY_ARRAY && r->elements > 0;
    for (size_t i = 0; all && i < r->elements; i++) {
        const redisReply *master = r->element[i]->element[2];
        all = master->element[0]->type == REDIS_REPLY_STRING && master->element[0]->len > ZEROS;
    }
    if (r)
        freeReplyObject(r);
    return all;
}

static int group_setup(void **state) {
    (void)state;
    test_watchdog_arm(180, "test_cluster_hostnames");
    if (cluster_fixture_start(NULL, &fx) != 0)
        return -1;
    for (int i = 0; i < CLUSTER_FIXTURE_NODES; i++) {
        char name[400];
        host_name_of(i, name, sizeof(name));
        node_config(i, "cluster-announce-hostname", name);
        node_config(i, "cluster-preferred-endpoint-type", "hostname");
    }
    /* the names travel with the cluster bus's pings */
    for (int64_t until = test_now_ms() + test_slack_ms(15000);;) {
        bool all = true;
        for (int i = 0; i < CLUSTER_FIXTURE_NODES; i++)
            all = all && slots_name_hosts(i);
        if (all)
            return 0;
        if (test_now_ms() >= until) {
            fprintf(stderr, "the nodes' CLUSTER SLOTS do not name every host\n");
            return -1;
        }
        test_sleep_ms(50);
    }
}

static int group_teardown(void **state) {
    (void)state;
    cluster_fixture_stop(fx);
    test_watchdog_disarm();
    return 0;
}

static void expect_node(dlock_client *c, const char *key, int node) {
    char want[420], name[400], got[420];
    host_name_of(node, name, sizeof(name));
    snprintf(want, sizeof(want), "%s:%d", name, cluster_fixture_port(fx, node));
    if (strcmp(client_node_of(c, key, got, sizeof(got)), want) != 0)
        fail_msg("node of %s: %s, want %s", key, got, want);
}

static void lock_and_release(dlock_client *c, const char *name) {
    dlock_lock *l;
    ASSERT_OK(dlock_lock_new(c, name, &l));
    int rc = dlock_lock_try_acquire(l, 10000, 30000);
    if (rc != DLOCK_OK)
        fail_msg("%s: %s: %s", name, dlock_err_name(rc), dlock_last_error());
    ASSERT_OK(dlock_lock_release(l));
    dlock_lock_free(l);
}

static void test_every_master_by_its_long_name_and_a_moved_slot_followed(void **state) {
    (void)state;
    test_watchdog_arm(120, __func__);
    int masters[3];
    cluster_masters(fx, masters);
    dlock_client *c = cluster_client(fx, (test_client_cfg){0});
    char names[3][CLUSTER_NAME_MAX];
    for (int k = 0; k < 3; k++) {
        cluster_name_on(fx, "named", masters[k], names[k], sizeof(names[k]));
        lock_and_release(c, names[k]);
        expect_node(c, names[k], masters[k]); /* three nodes, each named whole */
    }
    /* the first name's slot moves to the second master: the client hears MOVED naming the
     * new owner by its long name, and follows it */
    int slot = dlock__slot_of(names[0], strlen(names[0]));
    assert_int_equal(cluster_fixture_migrate_slot(fx, slot, masters[1]), 0);
    lock_and_release(c, names[0]);
    expect_node(c, names[0], masters[1]);
    ASSERT_OK(dlock_client_free(c));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_master_by_its_long_name_and_a_moved_slot_followed),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
