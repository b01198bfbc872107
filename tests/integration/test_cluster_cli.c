/* SPDX-License-Identifier: MIT */
/* test_cluster_cli.c — the dlock tool with a redis-cluster:// URL: `dlock inspect` reads a lock
 * kept on each of the three masters and names, in its `node` row and its JSON `node` field,
 * the master that serves the name's slot; `dlock release --force` frees a lock there and
 * says so. One 6-node cluster for the file; helpers: cli_helpers.h, cluster_load.h. */
#include "cli_helpers.h"
#include "cluster_load.h"
#include "topology_util.h"

#define HOLDER_ID "0b7c1a52-6f4e-4c1e-9a57-3d2f8e1c4b90"

static cluster_fixture *fx; /* the group's, set by each test */

static char *cluster_url(void) {
    return topo_asprintf("redis-cluster://%s", cluster_fixture_hosts(fx));
}

/* A lock named name held by HOLDER_ID:7 twice, written on its master's admin socket. */
static void hold_lock_on(int master, const char *name) {
    redis_fixture *node = cluster_fixture_node(fx, master);
    redisReply *r = redis_fixture_cmd(node, "HSET %s %s:7 2", name, HOLDER_ID);
    assert_non_null(r);
    assert_int_not_equal(r->type, REDIS_REPLY_ERROR);
    freeReplyObject(r);
    assert_int_equal(redis_fixture_int(node, "PEXPIRE %s 30000", name), 1);
}

static void test_inspect_names_the_master_that_serves_the_slot_of_each_name(void **state) {
    fx = *state;
    REQUIRE_CLI();
    char *url = cluster_url();
    int masters[3];
    cluster_masters(fx, masters);
    for (int i = 0; i < 3; i++) {
        char name[CLUSTER_NAME_MAX], row[96], field[96];
        cluster_name_on(fx, "inspected", masters[i], name, sizeof(name));
        hold_lock_on(masters[i], name);
        int port = cluster_fixture_port(fx, masters[i]);
        snprintf(row, sizeof(row), "node       127.0.0.1:%d\n", port);
        snprintf(field, sizeof(field), "\"node\":\"127.0.0.1:%d\"", port);

        cli_result r = DLOCK_CLI_RUN(NULL, 20000, "--url", url, "inspect", name);
        ASSERT_STATUS(r, 0);
        ASSERT_CONTAINS(r.out, "held by 1 owner(s), 2 hold(s)");
        ASSERT_CONTAINS(r.out, HOLDER_ID);
        ASSERT_CONTAINS(r.out, row);
        cli_result_free(&r);

        r = DLOCK_CLI_RUN(NULL, 20000, "--url", url, "inspect", "--json", name);
        ASSERT_STATUS(r, 0);
        assert_valid_json(r.out);
        ASSERT_CONTAINS(r.out, "\"kind\":\"lock\"");
        ASSERT_CONTAINS(r.out, field);
        cli_result_free(&r);
    }
    free(url);
}

/* A waiter in a Cluster subscribes on its shard (SSUBSCRIBE): inspect counts it there. */
static void test_inspect_counts_the_shard_subscribers_of_a_lock(void **state) {
    fx = *state;
    REQUIRE_CLI();
    char *url = cluster_url();
    int masters[3];
    cluster_masters(fx, masters);
    char name[CLUSTER_NAME_MAX], channel[CLUSTER_NAME_MAX + 32];
    cluster_name_on(fx, "watched", masters[2], name, sizeof(name));
    hold_lock_on(masters[2], name);
    snprintf(channel, sizeof(channel), "redisson_lock__channel:{%s}", name);
    redisContext *waiter = redisConnect("127.0.0.1", cluster_fixture_port(fx, masters[2]));
    assert_true(waiter && !waiter->err);
    redisReply *r = redisCommand(waiter, "SSUBSCRIBE %s", channel);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    freeReplyObject(r);
    cli_result out = DLOCK_CLI_RUN(NULL, 20000, "--url", url, "inspect", name);
    ASSERT_STATUS(out, 0);
    ASSERT_CONTAINS(out.out, "1 client(s) subscribed to");
    cli_result_free(&out);
    redisFree(waiter);
    free(url);
}

static void test_release_force_frees_the_lock_on_the_master_of_its_slot(void **state) {
    fx = *state;
    REQUIRE_CLI();
    char *url = cluster_url();
    int masters[3];
    cluster_masters(fx, masters);
    char name[CLUSTER_NAME_MAX], said[160];
    cluster_name_on(fx, "stuck", masters[2], name, sizeof(name));
    hold_lock_on(masters[2], name);
    cli_result r = DLOCK_CLI_RUN(NULL, 20000, "--url", url, "release", "--force", name);
    ASSERT_STATUS(r, 0);
    snprintf(said, sizeof(said), "%s: released (on 127.0.0.1:%d)", name,
             cluster_fixture_port(fx, masters[2]));
    ASSERT_CONTAINS(r.out, said);
    cli_result_free(&r);
    assert_int_equal(redis_fixture_int(cluster_fixture_node(fx, masters[2]), "EXISTS %s", name), 0);
    free(url);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_inspect_names_the_master_that_serves_the_slot_of_each_name,
                                  kill_spawned),
        cmocka_unit_test_teardown(test_inspect_counts_the_shard_subscribers_of_a_lock,
                                  kill_spawned),
        cmocka_unit_test_teardown(test_release_force_frees_the_lock_on_the_master_of_its_slot,
                                  kill_spawned),
    };
    return cmocka_run_group_tests(tests, cluster_group_setup, cluster_group_teardown);
}
