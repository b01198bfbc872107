/* SPDX-License-Identifier: MIT */
/* test_cli_topology.c — the cli tests of test_cli.c, split from it by concern: `dlock inspect`
 * and `dlock release --force` over every URL form the library takes, and the node inspect
 * says it read. Both read through the library's own connection, so a rediss:// URL (TLS,
 * with a CA, a client certificate, or insecure=1), a redis-sentinel:// URL and a
 * rediss-sentinel:// URL work as for `dlock run`; inspect names the node that served the
 * object (with a Sentinel URL: the master's address), and no password is ever printed.
 * Helpers: tests/support/cli_helpers.h; servers: tls_fixture.h, sentinel_fixture.h. */
#include "cli_helpers.h"
#include "sentinel_fixture.h"
#include "tls_fixture.h"
#include "topology_util.h"

#define HOLDER_ID "6e3814a1-e847-452b-a982-45baf93a1df2"
#define SECRET "tls-s3cret"

/* A lock named name held by HOLDER_ID:7 twice, written in Redis's layout over f's plain
 * admin socket (the tool alone speaks the URL under test). */
static void hold_lock(redis_fixture *f, const char *name) {
    redisReply *rep = redis_fixture_cmd(f, "HSET %s %s:7 2", name, HOLDER_ID);
    assert_non_null(rep);
    assert_int_not_equal(rep->type, REDIS_REPLY_ERROR);
    freeReplyObject(rep);
    assert_int_equal(redis_fixture_int(f, "PEXPIRE %s 30000", name), 1);
}

/* `dlock --url URL inspect NAME` (table, then --json) reads the holder and names node;
 * secret (NULL: none) shows nowhere. */
static void assert_inspect_reads_holder_at(const char *url, const char *name, const char *node,
                                           const char *secret) {
    cli_result r = DLOCK_CLI_RUN(NULL, 20000, "--url", url, "inspect", name);
    ASSERT_STATUS(r, 0);
    ASSERT_CONTAINS(r.out, "held by 1 owner(s), 2 hold(s)");
    ASSERT_CONTAINS(r.out, HOLDER_ID);
    char row[160];
    snprintf(row, sizeof(row), "node       %s\n", node);
    ASSERT_CONTAINS(r.out, row);
    if (secret) {
        assert_null(strstr(r.out, secret));
        assert_null(strstr(r.err, secret));
    }
    cli_result_free(&r);

    r = DLOCK_CLI_RUN(NULL, 20000, "--url", url, "inspect", "--json", name);
    ASSERT_STATUS(r, 0);
    assert_valid_json(r.out);
    ASSERT_CONTAINS(r.out, "\"kind\":\"lock\"");
    char field[160];
    snprintf(field, sizeof(field), "\"node\":\"%s\"", node);
    ASSERT_CONTAINS(r.out, field);
    if (secret)
        assert_null(strstr(r.out, secret));
    cli_result_free(&r);
}

/* `dlock --url URL release --force NAME` frees it: exit 0, "released (on node)", the hash
 * gone from f. */
static void assert_release_force_frees(const char *url, redis_fixture *f, const char *name,
                                       const char *node) {
    cli_result r = DLOCK_CLI_RUN(NULL, 20000, "--url", url, "release", "--force", name);
    ASSERT_STATUS(r, 0);
    char said[200];
    snprintf(said, sizeof(said), "%s: released (on %s)", name, node);
    ASSERT_CONTAINS(r.out, said);
    cli_result_free(&r);
    assert_int_equal(redis_fixture_int(f, "EXISTS %s", name), 0);
}

/* A TLS server (password: NULL none) where the lock name is held; *node (free it) is how
 * inspect must name the server. */
static tls_fixture *start_tls_holding(tls_fixture_client_certs certs, const char *password,
                                      const char *name, char **node) {
    tls_fixture_opts o = {.client_certs = certs, .requirepass = password};
    tls_fixture *t = NULL;
    assert_int_equal(tls_fixture_start(&o, &t), 0);
    hold_lock(tls_fixture_server(t), name);
    *node = topo_asprintf("127.0.0.1:%d (TLS)", tls_fixture_port(t));
    return t;
}

/* ---- TLS ---------------------------------------------------------------------------------- */

static void test_inspect_over_rediss_reads_the_holder_and_names_the_tls_node(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    char *node = NULL;
    tls_fixture *t = start_tls_holding(TLS_FIXTURE_CLIENT_CERT_NONE, SECRET, "orders", &node);
    assert_inspect_reads_holder_at(tls_fixture_url(t), "orders", node, SECRET);

    /* insecure=1 (no verification) reads the same; a CA that did not sign the server's
     * certificate is refused: unavailable (69), never a plaintext fallback. */
    char *insecure =
        topo_asprintf("rediss://:%s@127.0.0.1:%d?insecure=1", SECRET, tls_fixture_port(t));
    assert_inspect_reads_holder_at(insecure, "orders", node, SECRET);
    char *wrong_ca = topo_asprintf("rediss://:%s@127.0.0.1:%d?cacert=%s", SECRET,
                                   tls_fixture_port(t), tls_certs_wrong_ca(tls_fixture_certs(t)));
    cli_result r = DLOCK_CLI_RUN(NULL, 20000, "--url", wrong_ca, "inspect", "orders");
    ASSERT_STATUS(r, 69);
    assert_null(strstr(r.err, SECRET));
    cli_result_free(&r);
    free(wrong_ca);
    free(insecure);
    free(node);
    tls_fixture_stop(t);
}

static void test_inspect_over_mutual_tls_uses_the_client_certificate(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    char *node = NULL;
    tls_fixture *t = start_tls_holding(TLS_FIXTURE_CLIENT_CERT_REQUIRED, NULL, "orders", &node);
    assert_inspect_reads_holder_at(tls_fixture_mtls_url(t), "orders", node, NULL);
    free(node);
    tls_fixture_stop(t);
}

static void test_release_force_over_rediss_frees_the_lock(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    char *node = NULL;
    tls_fixture *t = start_tls_holding(TLS_FIXTURE_CLIENT_CERT_NONE, SECRET, "stuck", &node);
    redis_fixture *server = tls_fixture_server(t);
    assert_release_force_frees(tls_fixture_url(t), server, "stuck", node);

    /* what is not a lock is still refused, and left alone */
    redisReply *rep = redis_fixture_cmd(server, "HSET appdata field value");
    freeReplyObject(rep);
    cli_result r =
        DLOCK_CLI_RUN(NULL, 20000, "--url", tls_fixture_url(t), "release", "--force", "appdata");
    ASSERT_STATUS(r, 65);
    cli_result_free(&r);
    assert_int_equal(redis_fixture_int(server, "EXISTS appdata"), 1);
    free(node);
    tls_fixture_stop(t);
}

/* ---- Sentinel ----------------------------------------------------------------------------- */

/* inspect names the master the sentinels name (by address), release --force frees the lock
 * there; with tls, through rediss-sentinel://. */
static void check_sentinel_url(bool tls) {
    sentinel_fixture_opts o = {.sentinel_password = "s3nt1nel", .tls = tls};
    sentinel_fixture *fx = NULL;
    assert_int_equal(sentinel_fixture_start(&o, &fx), 0);
    int m = sentinel_fixture_master_index(fx);
    redis_fixture *master = sentinel_fixture_node(fx, m);
    hold_lock(master, "job");
    char *node =
        topo_asprintf("127.0.0.1:%d%s", sentinel_fixture_node_port(fx, m), tls ? " (TLS)" : "");
    assert_inspect_reads_holder_at(sentinel_fixture_url(fx), "job", node, "s3nt1nel");
    assert_release_force_frees(sentinel_fixture_url(fx), master, "job", node);
    free(node);
    sentinel_fixture_stop(fx);
}

static void test_inspect_through_sentinels_names_the_master_and_release_frees_it(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    check_sentinel_url(false);
}

static void test_inspect_through_sentinels_over_tls_names_the_tls_master(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    check_sentinel_url(true);
}

/* ---- unix socket -------------------------------------------------------------------------- */

static void test_inspect_over_a_unix_socket_names_the_socket(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_cli_server();
    hold_lock(f, "orders");
    char *node = topo_asprintf("unix socket %s", redis_fixture_socket(f));
    assert_inspect_reads_holder_at(redis_fixture_unix_url(f), "orders", node, NULL);
    free(node);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_inspect_over_rediss_reads_the_holder_and_names_the_tls_node,
                                  kill_spawned),
        cmocka_unit_test_teardown(test_inspect_over_mutual_tls_uses_the_client_certificate,
                                  kill_spawned),
        cmocka_unit_test_teardown(test_release_force_over_rediss_frees_the_lock, kill_spawned),
        cmocka_unit_test_teardown(
            test_inspect_through_sentinels_names_the_master_and_release_frees_it, kill_spawned),
        cmocka_unit_test_teardown(test_inspect_through_sentinels_over_tls_names_the_tls_master,
                                  kill_spawned),
        cmocka_unit_test_teardown(test_inspect_over_a_unix_socket_names_the_socket, kill_spawned),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
