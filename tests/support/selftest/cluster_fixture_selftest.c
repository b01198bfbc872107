/* SPDX-License-Identifier: MIT */
/* cluster_fixture_selftest.c - proves cluster_fixture.h before Cluster tests rely on it.
 *
 * Against six real redis-server nodes: the cluster comes up with 3 masters and 3 replicas
 * and every slot served; keys go to the node that owns their slot (others answer MOVED); a
 * slot migrated in two halves answers ASK in between and lands with its keys; a SIGKILLed
 * master's slots move to its replica; and no process outlives the fixture.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>

#include <cmocka.h>

#include "cluster_fixture.h"
#include "test_util.h"
#include "topology_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEST_BUDGET_S 90

static cluster_fixture *start_or_fail(void) {
    int64_t t0 = test_now_ms();
    cluster_fixture *f = NULL;
    assert_int_equal(cluster_fixture_start(NULL, &f), 0);
    assert_non_null(f);
    print_message("cluster up in %lld ms\n", (long long)(test_now_ms() - t0));
    return f;
}

static void stop_and_assert_gone(cluster_fixture *f) {
    pid_t pids[CLUSTER_FIXTURE_NODES];
    for (int i = 0; i < CLUSTER_FIXTURE_NODES; i++)
        pids[i] = redis_fixture_pid(cluster_fixture_node(f, i));
    cluster_fixture_stop(f);
    for (int i = 0; i < CLUSTER_FIXTURE_NODES; i++) {
        if (!topo_wait_gone(pids[i], 5000))
            fail_msg("node %d (pid %d) still running", i, (int)pids[i]);
    }
}

/* The reply to `cmd key` on node i starts with `prefix` (a status, string or error). */
static void assert_reply_starts(cluster_fixture *f, int i, const char *cmd, const char *key,
                                const char *prefix) {
    redisReply *r = redis_fixture_cmd(cluster_fixture_node(f, i), "%s %s", cmd, key);
    assert_non_null(r);
    if (r->str == NULL || strncmp(r->str, prefix, strlen(prefix)) != 0)
        fail_msg("%s %s on node %d: \"%s\", expected \"%s...\"", cmd, key, i,
                 r->str ? r->str : "(no text)", prefix);
    freeReplyObject(r);
}

static int another_master(cluster_fixture *f, int not ) {
    for (int i = 0; i < CLUSTER_FIXTURE_NODES; i++) {
        if (i != not &&cluster_fixture_is_master(f, i))
            return i;
    }
    return -1;
}

static void test_cluster_serves_every_slot_from_three_masters(void **state) {
    (void)state;
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    cluster_fixture *f = start_or_fail();
    int masters = 0;
    for (int i = 0; i < CLUSTER_FIXTURE_NODES; i++) {
        masters += cluster_fixture_is_master(f, i);
        assert_int_equal(strlen(cluster_fixture_node_id(f, i)), 40);
    }
    assert_int_equal(masters, 3);
    char expected[256] = "";
    for (int i = 0; i < CLUSTER_FIXTURE_NODES; i++)
        snprintf(expected + strlen(expected), sizeof expected - strlen(expected), "%s127.0.0.1:%d",
                 i ? "," : "", cluster_fixture_port(f, i));
    assert_string_equal(cluster_fixture_hosts(f), expected);

    int slot = cluster_fixture_slot_of_key(f, "foo");
    assert_int_equal(slot, 12182); /* CRC16("foo") mod 16384, as every client computes */
    int owner = cluster_fixture_node_of_slot(f, slot);
    assert_true(owner >= 0 && cluster_fixture_is_master(f, owner));
    assert_int_equal(cluster_fixture_node_of_slot(f, 0) >= 0, 1);
    assert_int_equal(cluster_fixture_node_of_slot(f, 16383) >= 0, 1);
    assert_int_equal(cluster_fixture_node_of_slot(f, 16384), -1);

    redisReply *r = redis_fixture_cmd(cluster_fixture_node(f, owner), "SET foo bar");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    assert_reply_starts(f, another_master(f, owner), "GET", "foo", "MOVED 12182 127.0.0.1:");
    stop_and_assert_gone(f);
    test_watchdog_disarm();
}

static void test_migrated_slot_answers_ask_then_lives_on_the_new_master(void **state) {
    (void)state;
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    cluster_fixture *f = start_or_fail();
    int slot = cluster_fixture_slot_of_key(f, "foo");
    int from = cluster_fixture_node_of_slot(f, slot);
    int to = another_master(f, from);
    redisReply *r = redis_fixture_cmd(cluster_fixture_node(f, from), "SET foo moved");
    assert_non_null(r);
    freeReplyObject(r);

    assert_int_equal(cluster_fixture_migrate_slot_begin(f, slot, to), 0);
    /* a key of the slot the old owner does not have is asked of the new one */
    assert_reply_starts(f, from, "GET", "{foo}absent", "ASK 12182 127.0.0.1:"); /* foo's slot */
    assert_reply_starts(f, from, "GET", "foo", "moved"); /* still here until moved */

    int64_t t0 = test_now_ms();
    assert_int_equal(cluster_fixture_migrate_slot_finish(f, slot, to), 0);
    print_message("slot migrated in %lld ms\n", (long long)(test_now_ms() - t0));
    assert_int_equal(cluster_fixture_node_of_slot(f, slot), to);
    assert_reply_starts(f, to, "GET", "foo", "moved");
    assert_reply_starts(f, from, "GET", "foo", "MOVED 12182 127.0.0.1:");
    stop_and_assert_gone(f);
    test_watchdog_disarm();
}

static void test_killed_master_is_replaced_by_its_replica(void **state) {
    (void)state;
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    cluster_fixture *f = start_or_fail();
    int slot = cluster_fixture_slot_of_key(f, "foo");
    int old = cluster_fixture_node_of_slot(f, slot);
    int64_t t0 = test_now_ms();
    int now = cluster_fixture_kill_master_of_slot(f, slot);
    print_message("killed master replaced in %lld ms\n", (long long)(test_now_ms() - t0));
    assert_true(now >= 0 && now != old);
    assert_true(cluster_fixture_is_master(f, now));
    assert_false(redis_fixture_running(cluster_fixture_node(f, old)));
    assert_int_equal(cluster_fixture_wait_ok(f, 1000), 0);
    redisReply *r = redis_fixture_cmd(cluster_fixture_node(f, now), "SET foo again");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    stop_and_assert_gone(f);
    test_watchdog_disarm();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cluster_serves_every_slot_from_three_masters),
        cmocka_unit_test(test_migrated_slot_answers_ask_then_lives_on_the_new_master),
        cmocka_unit_test(test_killed_master_is_replaced_by_its_replica),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
