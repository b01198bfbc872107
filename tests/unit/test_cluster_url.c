/* SPDX-License-Identifier: MIT */
/* test_cluster_url.c — what a Cluster client computes before any I/O: the slot of a key (the
 * cluster specification's vectors and hash tags), redis-cluster:// URLs (what each seed
 * becomes, a clear DLOCK_EINVAL otherwise, never a password in the reason), and the
 * scripts' Cluster texts (SPUBLISH everywhere a script publishes, the cross-slot flag). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "client/client.h"

/* ---- slots ------------------------------------------------------------------------------- */

static int slot(const char *key) {
    return dlock__slot_of(key, strlen(key));
}

static void test_crc16_is_the_xmodem_checksum_of_the_specification(void **state) {
    (void)state;
    assert_int_equal(dlock__crc16("123456789", 9), 0x31C3);
    assert_int_equal(dlock__crc16("", 0), 0);
}

static void test_slot_follows_the_hash_tag_rule(void **state) {
    (void)state;
    /* values from CLUSTER KEYSLOT on Redis 7.0 */
    assert_int_equal(slot("foo"), 12182);
    assert_int_equal(slot("job"), slot("redisson_lock__channel:{job}"));
    assert_int_equal(slot("{user1000}.following"), slot("{user1000}.followers"));
    assert_int_equal(slot("foo{}{bar}"), dlock__crc16("foo{}{bar}", 10) & 16383); /* empty tag */
    assert_int_equal(slot("foo{{bar}}zap"), slot("{bar")); /* the tag is "{bar" */
    assert_int_equal(slot("foo{bar}{zap}"), slot("bar"));  /* the first tag only */
    assert_int_equal(slot("x{"), dlock__crc16("x{", 2) & 16383);
    char binary[] = {'a', '\0', 'b'};
    assert_int_equal(dlock__slot_of(binary, 3), dlock__crc16(binary, 3) & 16383);
}

/* ---- URLs -------------------------------------------------------------------------------- */

static dlock__cluster_url parse_ok(const char *url) {
    dlock__cluster_url u;
    char err[200];
    if (dlock__cluster_url_parse(url, &u, err, sizeof(err)) != DLOCK_OK)
        fail_msg("%s: %s", url, err);
    return u;
}

static void expect_bad(const char *url, const char *reason_part) {
    dlock__cluster_url u;
    char err[200];
    if (dlock__cluster_url_parse(url, &u, err, sizeof(err)) != DLOCK_EINVAL)
        fail_msg("%s was accepted", url);
    if (!strstr(err, reason_part))
        fail_msg("%s: reason \"%s\" does not mention \"%s\"", url, err, reason_part);
    assert_null(strstr(err, "s3cret"));
    assert_null(u.seeds);
}

static void test_cluster_url_gives_every_seed_and_the_nodes_settings(void **state) {
    (void)state;
    assert_true(dlock__url_is_cluster("redis-cluster://h"));
    assert_true(dlock__url_is_cluster("rediss-cluster://h"));
    assert_false(dlock__url_is_cluster("redis://h"));
    dlock__cluster_url u =
        parse_ok("redis-cluster://app:s3cret@10.0.0.1:7000,10.0.0.2,[::1]:7002?sync_replicas=1");
    assert_int_equal(u.count, 3);
    assert_string_equal(u.seeds[0].host, "10.0.0.1");
    assert_int_equal(u.seeds[0].port, 7000);
    assert_string_equal(u.seeds[1].host, "10.0.0.2");
    assert_int_equal(u.seeds[1].port, 6379);
    assert_string_equal(u.seeds[2].host, "::1");
    assert_int_equal(u.seeds[2].port, 7002);
    assert_null(u.data.host);
    assert_string_equal(u.data.user, "app");
    assert_string_equal(u.data.password, "s3cret");
    assert_int_equal(u.data.sync_replicas, 1);
    assert_false(u.data.tls);
    dlock__cluster_url_free(&u);
    u = parse_ok("rediss-cluster://h1:7000?insecure=1");
    assert_true(u.data.tls);
    assert_true(u.seeds[0].tls_insecure);
    dlock__cluster_url_free(&u);
}

static void test_bad_cluster_urls_are_einval_saying_why(void **state) {
    (void)state;
    expect_bad("redis-cluster://", "no seed host");
    expect_bad("redis-cluster://:s3cret@", "no seed host");
    expect_bad("redis-cluster://h1,,h2", "empty seed host");
    expect_bad("redis-cluster://h1/3", "one database");
    expect_bad("redis-cluster://h1,h2:99999", "seed host 2");
    expect_bad("redis-cluster://h1?cacert=/x", "seed host 1");
    expect_bad("redis-clusters://h1", "scheme");
}

/* ---- one node's URL (dlock doctor asks every node) ----------------------------------------- */

static void expect_node_url(const char *url, const char *host, int port, const char *want) {
    char *node = NULL;
    assert_int_equal(dlock__cluster_node_url(url, host, port, &node), DLOCK_OK);
    assert_string_equal(node, want);
    dlock__endpoint ep;
    char err[200];
    if (dlock__url_parse(node, &ep, err, sizeof(err)) != DLOCK_OK)
        fail_msg("%s does not parse: %s", node, err);
    assert_string_equal(ep.host, host);
    assert_int_equal(ep.port, port);
    dlock__endpoint_free(&ep);
    dlock__free(node);
}

static void test_cluster_node_url_keeps_credentials_tls_and_query(void **state) {
    (void)state;
    expect_node_url("redis-cluster://app:s3cret@10.0.0.1:7000,10.0.0.2?sync_replicas=1", "10.0.0.9",
                    7005, "redis://app:s3cret@10.0.0.9:7005?sync_replicas=1");
    expect_node_url("rediss-cluster://h1:7000?insecure=1", "h6", 7006,
                    "rediss://h6:7006?insecure=1");
    expect_node_url("redis-cluster://h1", "::1", 7002, "redis://[::1]:7002");
    char *node = NULL;
    assert_int_equal(dlock__cluster_node_url("redis://h1", "h2", 1, &node), DLOCK_EINVAL);
    assert_int_equal(dlock__cluster_node_url("redis-cluster://h1", "h2", 0, &node), DLOCK_EINVAL);
    assert_int_equal(dlock__cluster_node_url("redis-cluster://h1", "", 7000, &node), DLOCK_EINVAL);
    assert_null(node);
}

/* ---- the scripts' Cluster texts ---------------------------------------------------------- */

static void test_cluster_scripts_publish_sharded_and_allow_cross_slot_keys(void **state) {
    (void)state;
    dlock_client *c = calloc(1, sizeof(*c));
    assert_non_null(c);
    assert_int_equal(dlock__scripts_shard(c), DLOCK_OK);
    for (int i = 0; i < DLOCK__SCRIPT_COUNT; i++) {
        size_t len;
        const char *text = dlock__script_text(c, (enum dlock__script_id)i, &len);
        assert_int_equal(len, strlen(text));
        assert_int_equal(strncmp(text, "#!lua flags=allow-cross-slot-keys\n", 34), 0);
        assert_non_null(strstr(text, "KEYS, ARGV = keys, args")); /* the prelude */
        /* no publish left in any other form: every wake-up is sharded in a Cluster */
        if (strstr(text, "'publish'") || strstr(text, "\"publish\"") || strstr(text, "'PUBLISH'") ||
            strstr(text, "\"PUBLISH\""))
            fail_msg("%s publishes in a form the Cluster text does not rewrite",
                     dlock__scripts[i].name);
        bool publishes = strstr(dlock__scripts[i].text, "('publish',") != NULL;
        assert_int_equal(publishes, strstr(text, "('spublish',") != NULL);
    }
    dlock__scripts_free(c);
    free(c);
}

/* The KEYS a Cluster client passes undeclared, the build's reading of each script header's
 * [unstored] tags: exactly the channels, the read-write lock's name base and the lock's
 * hand-off keys of today's scripts, and every KEYS[i] a script publishes to. */
static void test_undeclared_cluster_keys_are_the_channels_of_each_header(void **state) {
    (void)state;
    static const struct {
        const char *script;
        unsigned positions;
    } expected[] = {
        {"fairlock/fair", 1u << 4},
        {"lock/acquire", 1u << 2 | 1u << 3}, /* the hand-off marker and queue: usually absent,
                                                 touched only outside a migration */
        {"lock/force_release", 1u << 2},
        {"lock/handoff_drop_cluster", 1u << 2 | 1u << 3}, /* the same, N declared to route it */
        {"lock/release", 1u << 2 | 1u << 3 | 1u << 4 | 1u << 5}, /* the same, and channels */
        {"rwlock/rw", 1u << 2 | 1u << 4},
        {"semaphore/latch_count_down", 1u << 2},
        {"semaphore/latch_try_set", 1u << 2},
        {"semaphore/permits", 1u << 3},
        {"semaphore/sem_add", 1u << 2},
        {"semaphore/sem_release", 1u << 2},
        {"semaphore/sem_try_set", 1u << 2},
    };
    for (int id = 0; id < DLOCK__SCRIPT_COUNT; id++) {
        const char *name = dlock__scripts[id].name, *text = dlock__scripts[id].text;
        unsigned want = 0, got = dlock__scripts[id].unstored_keys;
        for (size_t i = 0; i < sizeof(expected) / sizeof(*expected); i++)
            if (strcmp(name, expected[i].script) == 0)
                want = expected[i].positions;
        if (got != want)
            fail_msg("%s: its header gives 0x%x, expected 0x%x", name, got, want);
        for (const char *at = text; (at = strstr(at, "('publish', KEYS[")); at++) {
            int k = atoi(at + strlen("('publish', KEYS["));
            if (!(got & (1u << k)))
                fail_msg("%s publishes to KEYS[%d], which it declares in a Cluster", name, k);
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc16_is_the_xmodem_checksum_of_the_specification),
        cmocka_unit_test(test_slot_follows_the_hash_tag_rule),
        cmocka_unit_test(test_cluster_url_gives_every_seed_and_the_nodes_settings),
        cmocka_unit_test(test_bad_cluster_urls_are_einval_saying_why),
        cmocka_unit_test(test_cluster_node_url_keeps_credentials_tls_and_query),
        cmocka_unit_test(test_cluster_scripts_publish_sharded_and_allow_cross_slot_keys),
        cmocka_unit_test(test_undeclared_cluster_keys_are_the_channels_of_each_header),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
