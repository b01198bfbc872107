/* SPDX-License-Identifier: MIT */
/* test_cli_doctor.c — `dlock doctor`: a healthy server passes (exit 0, ok and warn only,
 * valid --json); an evicting policy fails naming noeviction; the ACL check finds every word
 * of the documented rule (scripts/acl-rule.py) missing in turn, naming what is missing; the
 * run writes nothing (dirty counter, DBSIZE, no command flagged "write" ran); on a Cluster
 * every slot is served and sharded pub/sub is checked; under Sentinel the sentinels agree on
 * the master (ok), one is down (warn), one names another server (fail); over TLS the server's
 * certificate's expiry is read (the fixture's is valid 2 days: a warning).
 * Helpers: tests/support/cli_helpers.h. Every test starts its own servers. */
#include "acl_rule_words.h"
#include "cli_helpers.h"
#include "cluster_fixture.h"
#include "sentinel_fixture.h"
#include "tls_fixture.h"
#include "topology_util.h"

#define USER "doctored"
#define PASSWORD "pw-doctor-s3cret"
#define PREFIX "dlock-doctor:" /* the rule's prefix: doctor's default --name is under it */

/* No line of doctor's table says fail. */
static void assert_no_fail_line(const cli_result *r) {
    if (strncmp(r->out, "fail", 4) == 0 || strstr(r->out, "\nfail"))
        fail_msg("a check failed:\n%s", r->out);
}

static void test_doctor_healthy_server_exits_0_with_ok_and_warn_only(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_cli_server();
    cli_result r = DLOCK_CLI_RUN(f, 30000, "doctor");
    ASSERT_STATUS(r, 0);
    assert_no_fail_line(&r);
    ASSERT_CONTAINS(r.out, "ok    server ");
    ASSERT_CONTAINS(r.out, "ok    maxmemory-policy       noeviction");
    ASSERT_CONTAINS(r.out, "warn  persistence            none"); /* the fixture saves nothing */
    ASSERT_CONTAINS(r.out, "ok    acl: lock scripts");
    ASSERT_CONTAINS(r.out, "round trip             p50 ");
    assert_null(strstr(r.out, "tls certificate")); /* no TLS, nothing to expire */
    cli_result_free(&r);

    r = DLOCK_CLI_RUN(f, 30000, "doctor", "--json", redis_fixture_unix_url(f));
    ASSERT_STATUS(r, 0);
    assert_valid_json(r.out);
    static const char head[] = "{\"checks\":[{\"name\":\"server\",\"status\":\"ok\",\"detail\":";
    assert_memory_equal(r.out, head, strlen(head));
    ASSERT_CONTAINS(r.out, "{\"name\":\"maxmemory-policy\",\"status\":\"ok\"");
    ASSERT_CONTAINS(r.out, "\"fix\":\"");
    assert_null(strstr(r.out, "\"status\":\"fail\""));
    cli_result_free(&r);
    redis_fixture_stop(f);
}

static void test_doctor_allkeys_lru_fails_naming_noeviction(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_cli_server();
    freeReplyObject(redis_fixture_cmd(f, "CONFIG SET maxmemory-policy allkeys-lru"));
    cli_result r = DLOCK_CLI_RUN(f, 30000, "doctor");
    ASSERT_STATUS(r, 1);
    ASSERT_CONTAINS(r.out, "fail  maxmemory-policy       allkeys-lru");
    ASSERT_CONTAINS(r.out, "-> CONFIG SET maxmemory-policy noeviction");
    cli_result_free(&r);

    freeReplyObject(redis_fixture_cmd(f, "CONFIG SET maxmemory-policy volatile-ttl"));
    r = DLOCK_CLI_RUN(f, 30000, "doctor", "--json");
    ASSERT_STATUS(r, 1); /* every lock key has a TTL: volatile-* evicts held locks */
    assert_valid_json(r.out);
    ASSERT_CONTAINS(r.out, "{\"name\":\"maxmemory-policy\",\"status\":\"fail\"");
    ASSERT_CONTAINS(r.out, "noeviction");
    cli_result_free(&r);
    redis_fixture_stop(f);
}

static void test_doctor_bad_command_line_is_64_and_unreachable_is_69(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    cli_result r = DLOCK_CLI_RUN(NULL, 30000, "doctor", "redis://127.0.0.1:1", "extra");
    ASSERT_STATUS(r, 64);
    ASSERT_CONTAINS(r.err, "one URL at most");
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(NULL, 30000, "doctor", "--name", "", "redis://127.0.0.1:1");
    ASSERT_STATUS(r, 64);
    ASSERT_CONTAINS(r.err, "--name: ");
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(NULL, 30000, "doctor", "--user", "", "redis://127.0.0.1:1");
    ASSERT_STATUS(r, 64);
    cli_result_free(&r);
    /* port 1: nothing listens there */
    r = DLOCK_CLI_RUN(NULL, 30000, "--connect-timeout", "2000", "doctor",
                      "redis://u:" PASSWORD "@127.0.0.1:1");
    ASSERT_STATUS(r, 69);
    ASSERT_CONTAINS(r.err, "cannot connect to redis://u:***@127.0.0.1:1");
    assert_null(strstr(r.err, PASSWORD));
    assert_string_equal(r.out, "");
    cli_result_free(&r);
}

/* ---- the ACL ------------------------------------------------------------------------------ */

/* USER made afresh with the rule's words, but for words[skip] (-1: none). */
static void set_user(redis_fixture *f, char **words, int n, int skip) {
    freeReplyObject(redis_fixture_cmd(f, "ACL DELUSER %s", USER));
    const char *argv[ACL_RULE_WORDS_MAX];
    int argc = 0;
    for (int i = 0; i < n; i++)
        if (i != skip)
            argv[argc++] = words[i];
    redisReply *r = redis_fixture_cmd_argv(f, argc, argv, NULL);
    assert_non_null(r);
    if (r->type == REDIS_REPLY_ERROR)
        fail_msg("ACL SETUSER: %s", r->str);
    freeReplyObject(r);
}

/* What doctor must name when word is missing: a command ("+zadd" -> "zadd (") or a key or
 * channel ("~redisson_sc:{dlock-doctor:*" -> "redisson_sc:{dlock-doctor:"). */
static void expected_naming(const char *word, char *buf, size_t size) {
    if (word[0] == '+')
        snprintf(buf, size, "%s (", word + 1);
    else
        snprintf(buf, size, "%.*s", (int)strcspn(word + 1, "*"), word + 1);
}

static void test_doctor_acl_names_each_missing_word_of_the_rule(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S * 4, __func__);
    redis_fixture *f = start_cli_server();
    char *words[ACL_RULE_WORDS_MAX];
    int n = acl_rule_words("single", USER, PASSWORD, PREFIX, words);

    /* the whole rule: every ACL check passes (the admin's URL, --user names the user) */
    set_user(f, words, n, -1);
    cli_result r = DLOCK_CLI_RUN(f, 30000, "doctor", "--user", USER);
    ASSERT_STATUS(r, 0);
    assert_no_fail_line(&r);
    ASSERT_CONTAINS(r.out, "ok    acl: keys and channels user " USER " may use all");
    assert_null(strstr(r.out, "warn  acl"));
    cli_result_free(&r);
    /* --name: the namespace itself passes, a name outside it fails on its keys */
    r = DLOCK_CLI_RUN(f, 30000, "doctor", "--user", USER, "--name", PREFIX);
    ASSERT_STATUS(r, 0);
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(f, 30000, "doctor", "--user", USER, "--name", "app:");
    ASSERT_STATUS(r, 1);
    ASSERT_CONTAINS(r.out, "fail  acl: keys and channels user " USER " may not: app: (");
    ASSERT_CONTAINS(r.out, "ACL SETUSER " USER " ~app: ~{app:}:doctor ~redisson_lock_queue:{app:}");
    cli_result_free(&r);

    /* each grant taken away in turn: doctor fails and names it */
    int checked = 0;
    for (int i = 0; i < n; i++) {
        if (!strchr("+~&", words[i][0]))
            continue; /* ACL SETUSER user on >pw resetkeys resetchannels -@all */
        set_user(f, words, n, i);
        r = DLOCK_CLI_RUN(f, 30000, "doctor", "--user", USER);
        char naming[300];
        expected_naming(words[i], naming, sizeof(naming));
        if (r.status != 1 || !strstr(r.out, "fail  acl: ") || !strstr(r.out, naming))
            fail_msg("without %s: exit %d, and no failed acl check naming \"%s\":\n%s", words[i],
                     r.status, naming, r.out);
        assert_null(strstr(r.out, PASSWORD));
        cli_result_free(&r);
        checked++;
    }
    assert_true(checked > 40);
    acl_rule_words_free(words, n);
    redis_fixture_stop(f);
}

static void test_doctor_as_the_user_itself_warns_it_cannot_dryrun(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_cli_server();
    char *words[ACL_RULE_WORDS_MAX];
    int n = acl_rule_words("single", USER, PASSWORD, PREFIX, words);
    set_user(f, words, n, -1);
    char *url =
        topo_asprintf("unix://%s?user=%s&password=%s", redis_fixture_socket(f), USER, PASSWORD);
    cli_result r = DLOCK_CLI_RUN(f, 30000, "doctor", url);
    ASSERT_STATUS(r, 0); /* nothing it could see would break dlock */
    ASSERT_CONTAINS(r.out, "warn  acl ");
    ASSERT_CONTAINS(r.out, "--user NAME");
    assert_null(strstr(r.out, PASSWORD));
    assert_null(strstr(r.err, PASSWORD));
    cli_result_free(&r);
    free(url);
    acl_rule_words_free(words, n);
    redis_fixture_stop(f);
}

/* ---- read-only ---------------------------------------------------------------------------- */

/* INFO commandstats' text: "cmdstat_<name>:calls=N,..." lines. */
static char *command_calls_text(redis_fixture *f) {
    char *info = redis_fixture_str(f, "INFO commandstats");
    assert_non_null(info);
    return info;
}

/* calls of cmd in an INFO commandstats text, 0 if absent. */
static long long calls_in(const char *info, const char *cmd) {
    char head[128];
    snprintf(head, sizeof(head), "cmdstat_%s:calls=", cmd);
    const char *p = strstr(info, head);
    return p ? atoll(p + strlen(head)) : 0;
}

static void test_doctor_writes_nothing(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_cli_server();
    freeReplyObject(redis_fixture_cmd(f, "SET " PREFIX "existing 1"));
    long long dirty = redis_fixture_info_int(f, "persistence", "rdb_changes_since_last_save");
    long long keys = redis_fixture_int(f, "DBSIZE");
    char *before = command_calls_text(f);

    cli_result r = DLOCK_CLI_RUN(f, 30000, "doctor");
    ASSERT_STATUS(r, 0);
    cli_result_free(&r);

    assert_int_equal(redis_fixture_info_int(f, "persistence", "rdb_changes_since_last_save"),
                     dirty);
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), keys);
    char *after = command_calls_text(f);
    /* every command that ran more often than before: none is flagged "write", none is a
     * CONFIG SET */
    int ran = 0;
    for (const char *p = strstr(after, "cmdstat_"); p; p = strstr(p + 1, "cmdstat_")) {
        char cmd[64];
        snprintf(cmd, sizeof(cmd), "%.*s", (int)strcspn(p + 8, ":"), p + 8);
        if (calls_in(after, cmd) <= calls_in(before, cmd))
            continue;
        ran++;
        assert_string_not_equal(cmd, "config|set");
        redisReply *info = redis_fixture_cmd(f, "COMMAND INFO %s", cmd);
        assert_non_null(info);
        assert_int_equal(info->type, REDIS_REPLY_ARRAY);
        assert_int_equal(info->elements, 1);
        redisReply *flags = info->element[0]->element[2];
        for (size_t i = 0; i < flags->elements; i++)
            if (strcmp(flags->element[i]->str, "write") == 0)
                fail_msg("doctor ran %s, a write command", cmd);
        freeReplyObject(info);
    }
    assert_true(ran > 5); /* it did ask: info, acl|dryrun, ping, ... */
    assert_true(calls_in(after, "acl|dryrun") > 50);
    free(before);
    free(after);
    redis_fixture_stop(f);
}

/* ---- Cluster ------------------------------------------------------------------------------- */

static void test_doctor_cluster_slots_served_and_sharded_pubsub_checked(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    cluster_fixture *fx = NULL;
    assert_int_equal(cluster_fixture_start(NULL, &fx), 0);
    char *url = topo_asprintf("redis-cluster://%s", cluster_fixture_hosts(fx));
    cli_result r = DLOCK_CLI_RUN(NULL, 30000, "doctor", url);
    ASSERT_STATUS(r, 0);
    assert_no_fail_line(&r);
    /* ok, or warn when CLUSTER SLOTS lists no replica yet (it names only synced ones) */
    ASSERT_CONTAINS(r.out, "  cluster slots          16384 of 16384 slots served");
    ASSERT_CONTAINS(r.out, "ok    sharded pub/sub");
    ASSERT_CONTAINS(r.out, "ok    acl: cluster");
    ASSERT_CONTAINS(r.out, "(cluster)");
    cli_result_free(&r);
    free(url);
    cluster_fixture_stop(fx);
}

/* rdb_changes_since_last_save and DBSIZE of every node, into dirty[] and keys[]. */
static void cluster_counts(cluster_fixture *fx, long long *dirty, long long *keys) {
    for (int i = 0; i < CLUSTER_FIXTURE_NODES; i++) {
        redis_fixture *node = cluster_fixture_node(fx, i);
        dirty[i] = redis_fixture_info_int(node, "persistence", "rdb_changes_since_last_save");
        keys[i] = redis_fixture_int(node, "DBSIZE");
    }
}

/* The line of check name in doctor's table ("fail  maxmemory-policy ..."), copied. */
static char *line_of(const char *out, const char *name) {
    char head[64];
    snprintf(head, sizeof(head), "  %-22s ", name);
    const char *p = strstr(out, head);
    if (!p)
        fail_msg("no line for %s:\n%s", name, out);
    while (p > out && p[-1] != '\n')
        p--;
    return topo_asprintf("%.*s", (int)strcspn(p, "\n"), p);
}

/* Waits until CLUSTER SLOTS lists a replica beside every master (it names synced ones only),
 * so that doctor finds all six nodes in the map. */
static void wait_slots_list_replicas(cluster_fixture *fx) {
    int64_t until = test_now_ms() + test_slack_ms(30000);
    for (;;) {
        redisReply *slots = redis_fixture_cmd(cluster_fixture_node(fx, 0), "CLUSTER SLOTS");
        assert_non_null(slots);
        bool all = slots->type == REDIS_REPLY_ARRAY && slots->elements > 0;
        for (size_t i = 0; all && i < slots->elements; i++)
            all = slots->element[i]->elements >= 4;
        freeReplyObject(slots);
        if (all)
            return;
        if (test_now_ms() > until)
            fail_msg("CLUSTER SLOTS lists no replica for some master after 30 s");
        test_sleep_ms(50);
    }
}

static void test_doctor_cluster_checks_every_node_naming_the_one_misconfigured(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S * 2, __func__);
    cluster_fixture *fx = NULL;
    assert_int_equal(cluster_fixture_start(NULL, &fx), 0);
    wait_slots_list_replicas(fx);
    char *url = topo_asprintf("redis-cluster://%s", cluster_fixture_hosts(fx));
    int bad_master = -1, bad_replica = -1;
    for (int i = 0; i < CLUSTER_FIXTURE_NODES; i++) {
        if (cluster_fixture_is_master(fx, i) && bad_master < 0 && i > 0)
            bad_master = i;
        else if (!cluster_fixture_is_master(fx, i) && bad_replica < 0)
            bad_replica = i;
    }
    assert_true(bad_master > 0 && bad_replica >= 0);

    /* one master evicts; one replica's user lacks a word of the rule (+hincrby): ACLs are
     * each node's own */
    freeReplyObject(redis_fixture_cmd(cluster_fixture_node(fx, bad_master),
                                      "CONFIG SET maxmemory-policy allkeys-lru"));
    char *single[ACL_RULE_WORDS_MAX], *cluster[ACL_RULE_WORDS_MAX];
    int n_single = acl_rule_words("single", USER, PASSWORD, PREFIX, single);
    int n_cluster = acl_rule_words("cluster", USER, PASSWORD, PREFIX, cluster);
    for (int i = 0; i < CLUSTER_FIXTURE_NODES; i++) {
        redis_fixture *node = cluster_fixture_node(fx, i);
        const char *argv[ACL_RULE_WORDS_MAX];
        int argc = 0;
        for (int k = 0; k < n_single; k++)
            if (i != bad_replica || strcmp(single[k], "+hincrby") != 0)
                argv[argc++] = single[k];
        freeReplyObject(redis_fixture_cmd_argv(node, argc, argv, NULL));
        freeReplyObject(redis_fixture_cmd_argv(node, n_cluster, (const char **)cluster, NULL));
    }
    long long dirty[CLUSTER_FIXTURE_NODES], keys[CLUSTER_FIXTURE_NODES];
    cluster_counts(fx, dirty, keys);

    cli_result r = DLOCK_CLI_RUN(NULL, 60000, "doctor", "--user", USER, url);
    ASSERT_STATUS(r, 1);
    char bad_master_label[64], bad_replica_label[64];
    snprintf(bad_master_label, sizeof(bad_master_label), "127.0.0.1:%d (master): allkeys-lru",
             cluster_fixture_port(fx, bad_master));
    snprintf(bad_replica_label, sizeof(bad_replica_label), "127.0.0.1:%d (replica)",
             cluster_fixture_port(fx, bad_replica));
    /* the failing node first on its check's line, the five others after it */
    char *eviction = line_of(r.out, "maxmemory-policy");
    ASSERT_CONTAINS(eviction, "fail  maxmemory-policy       ");
    ASSERT_CONTAINS(eviction, bad_master_label);
    ASSERT_CONTAINS(eviction, "noeviction");
    ASSERT_CONTAINS(eviction, "-> CONFIG SET maxmemory-policy noeviction");
    free(eviction);
    char *acl = line_of(r.out, "acl: lock scripts");
    ASSERT_CONTAINS(acl, "fail  acl: lock scripts");
    ASSERT_CONTAINS(acl, bad_replica_label);
    ASSERT_CONTAINS(acl, "hincrby (");
    free(acl);
    /* every other check: all six nodes, or the masters, saw the same or each said its own */
    char *server = line_of(r.out, "server");
    ASSERT_CONTAINS(server, "all 6 nodes: Redis ");
    free(server);
    char *replicas = line_of(r.out, "replicas");
    for (int i = 0; i < CLUSTER_FIXTURE_NODES; i++) {
        char label[64];
        snprintf(label, sizeof(label), "127.0.0.1:%d (master)", cluster_fixture_port(fx, i));
        if (cluster_fixture_is_master(fx, i) && !strstr(replicas, label) &&
            !strstr(replicas, "all 3 nodes asked"))
            fail_msg("replicas does not name master %s:\n%s", label, replicas);
    }
    assert_null(strstr(replicas, "(replica)")); /* a replica is not asked about WAIT */
    free(replicas);
    ASSERT_CONTAINS(r.out, "  cluster slots          16384 of 16384 slots served");
    cli_result_free(&r);

    /* doctor wrote nothing on any node */
    long long dirty_after[CLUSTER_FIXTURE_NODES], keys_after[CLUSTER_FIXTURE_NODES];
    cluster_counts(fx, dirty_after, keys_after);
    for (int i = 0; i < CLUSTER_FIXTURE_NODES; i++) {
        assert_int_equal(dirty_after[i], dirty[i]);
        assert_int_equal(keys_after[i], keys[i]);
    }

    /* mended, it passes */
    freeReplyObject(redis_fixture_cmd(cluster_fixture_node(fx, bad_master),
                                      "CONFIG SET maxmemory-policy noeviction"));
    freeReplyObject(
        redis_fixture_cmd(cluster_fixture_node(fx, bad_replica), "ACL SETUSER %s +hincrby", USER));
    r = DLOCK_CLI_RUN(NULL, 60000, "doctor", "--user", USER, url);
    ASSERT_STATUS(r, 0);
    assert_no_fail_line(&r);
    cli_result_free(&r);

    /* a node without the user at all: a failure naming it, not "cannot check" */
    freeReplyObject(
        redis_fixture_cmd(cluster_fixture_node(fx, bad_replica), "ACL DELUSER %s", USER));
    r = DLOCK_CLI_RUN(NULL, 60000, "doctor", "--user", USER, url);
    ASSERT_STATUS(r, 1);
    acl = line_of(r.out, "acl");
    ASSERT_CONTAINS(acl, "fail  acl ");
    ASSERT_CONTAINS(acl, bad_replica_label);
    ASSERT_CONTAINS(acl, "user " USER " does not exist here");
    free(acl);
    cli_result_free(&r);
    acl_rule_words_free(single, n_single);
    acl_rule_words_free(cluster, n_cluster);
    free(url);
    cluster_fixture_stop(fx);
}

/* ---- TLS ------------------------------------------------------------------------------------- */

static void test_doctor_tls_reads_when_the_certificate_expires(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    tls_fixture_opts o = {.client_certs = TLS_FIXTURE_CLIENT_CERT_NONE};
    tls_fixture *t = NULL;
    assert_int_equal(tls_fixture_start(&o, &t), 0);
    cli_result r = DLOCK_CLI_RUN(NULL, 30000, "doctor", tls_fixture_url(t));
    ASSERT_STATUS(r, 0); /* a warning only */
    ASSERT_CONTAINS(r.out, "warn  tls certificate        the server's certificate expires in ");
    ASSERT_CONTAINS(r.out, " day(s), on 20");
    ASSERT_CONTAINS(r.out, "-> renew the server's certificate");
    cli_result_free(&r);
    tls_fixture_stop(t);
}

/* ---- Sentinel ------------------------------------------------------------------------------ */

static void test_doctor_sentinels_agree_then_one_down_then_one_disagrees(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    sentinel_fixture *fx = NULL;
    assert_int_equal(sentinel_fixture_start(NULL, &fx), 0);
    const char *url = sentinel_fixture_url(fx);
    int master_port = sentinel_fixture_node_port(fx, sentinel_fixture_master_index(fx));
    int replica_port = sentinel_fixture_node_port(fx, sentinel_fixture_replica_index(fx));

    cli_result r = DLOCK_CLI_RUN(NULL, 30000, "doctor", url);
    ASSERT_STATUS(r, 0);
    assert_no_fail_line(&r);
    char agree[160];
    snprintf(agree, sizeof(agree),
             "ok    sentinels              all 3 sentinels name the master 127.0.0.1:%d, the "
             "one the client uses",
             master_port);
    ASSERT_CONTAINS(r.out, agree);
    ASSERT_CONTAINS(r.out, "ok    replicas               master with 1 replica(s)");
    cli_result_free(&r);

    /* a sentinel that names the replica as the master: they disagree */
    redisReply *rep = sentinel_fixture_sentinel_cmd(fx, 2, "SENTINEL REMOVE %s",
                                                    sentinel_fixture_master_name(fx));
    assert_non_null(rep);
    freeReplyObject(rep);
    rep = sentinel_fixture_sentinel_cmd(fx, 2, "SENTINEL MONITOR %s 127.0.0.1 %d 2",
                                        sentinel_fixture_master_name(fx), replica_port);
    assert_non_null(rep);
    assert_int_not_equal(rep->type, REDIS_REPLY_ERROR);
    freeReplyObject(rep);
    r = DLOCK_CLI_RUN(NULL, 30000, "doctor", url);
    ASSERT_STATUS(r, 1);
    ASSERT_CONTAINS(r.out, "fail  sentinels              the sentinels disagree: ");
    char names_replica[64];
    snprintf(names_replica, sizeof(names_replica), "names 127.0.0.1:%d", replica_port);
    ASSERT_CONTAINS(r.out, names_replica);
    cli_result_free(&r);

    /* that sentinel gone: the two left agree, one of three does not answer */
    assert_int_equal(sentinel_fixture_kill_sentinel(fx, 2), 0);
    r = DLOCK_CLI_RUN(NULL, 30000, "doctor", url);
    ASSERT_STATUS(r, 0);
    ASSERT_CONTAINS(r.out, "warn  sentinels              2 of 3 sentinels name ");
    cli_result_free(&r);
    sentinel_fixture_stop(fx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_doctor_healthy_server_exits_0_with_ok_and_warn_only,
                                  kill_spawned),
        cmocka_unit_test_teardown(test_doctor_allkeys_lru_fails_naming_noeviction, kill_spawned),
        cmocka_unit_test_teardown(test_doctor_bad_command_line_is_64_and_unreachable_is_69,
                                  kill_spawned),
        cmocka_unit_test_teardown(test_doctor_acl_names_each_missing_word_of_the_rule,
                                  kill_spawned),
        cmocka_unit_test_teardown(test_doctor_as_the_user_itself_warns_it_cannot_dryrun,
                                  kill_spawned),
        cmocka_unit_test_teardown(test_doctor_writes_nothing, kill_spawned),
        cmocka_unit_test_teardown(test_doctor_cluster_slots_served_and_sharded_pubsub_checked,
                                  kill_spawned),
        cmocka_unit_test_teardown(
            test_doctor_cluster_checks_every_node_naming_the_one_misconfigured, kill_spawned),
        cmocka_unit_test_teardown(test_doctor_tls_reads_when_the_certificate_expires, kill_spawned),
        cmocka_unit_test_teardown(test_doctor_sentinels_agree_then_one_down_then_one_disagrees,
                                  kill_spawned),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
