/* SPDX-License-Identifier: MIT */
/* test_sentinel_cli.c — the dlock tool with a redis-sentinel:// URL: `dlock run` holds its
 * lock on the master the sentinels name, `dlock inspect` says which master it read (table
 * and JSON), a master name no sentinel knows is exit 64 naming it, and the sentinel password
 * never shows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli_run.h"
#include "harness.h"
#include "sentinel_fixture.h"
#include "topology_util.h"

static sentinel_fixture *fx;

static int group_setup(void **state) {
    (void)state;
    test_watchdog_arm(60, "test_sentinel_cli");
    sentinel_fixture_opts o = {.sentinel_password = "s3nt1nel"};
    return sentinel_fixture_start(&o, &fx);
}

static int group_teardown(void **state) {
    (void)state;
    cli_kill_spawned();
    sentinel_fixture_stop(fx);
    test_watchdog_disarm();
    return 0;
}

static void test_run_holds_its_lock_on_the_master_the_sentinels_name(void **state) {
    (void)state;
    REQUIRE_CLI();
    redis_fixture *master = sentinel_fixture_node(fx, sentinel_fixture_master_index(fx));
    char *admin = topo_asprintf("redis-cli -s %s EXISTS job", redis_fixture_socket(master));
    /* inside the run, the lock exists on the master (the command asks it over the socket) */
    cli_result r = DLOCK_CLI_RUN(NULL, 20000, "--url", sentinel_fixture_url(fx), "run", "job", "--",
                                 "sh", "-c", admin);
    ASSERT_STATUS(r, 0);
    ASSERT_CONTAINS(r.out, "1");
    assert_int_equal(redis_fixture_int(master, "EXISTS job"), 0); /* released after */
    cli_result_free(&r);
    free(admin);
}

static void test_inspect_says_which_master_it_read(void **state) {
    (void)state;
    REQUIRE_CLI();
    int m = sentinel_fixture_master_index(fx);
    char *row = topo_asprintf("node       127.0.0.1:%d\n", sentinel_fixture_node_port(fx, m));
    char *field = topo_asprintf("\"node\":\"127.0.0.1:%d\"", sentinel_fixture_node_port(fx, m));
    cli_result r = DLOCK_CLI_RUN(NULL, 20000, "--url", sentinel_fixture_url(fx), "inspect", "x");
    ASSERT_STATUS(r, 0);
    ASSERT_CONTAINS(r.out, row);
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(NULL, 20000, "--url", sentinel_fixture_url(fx), "inspect", "--json", "x");
    ASSERT_STATUS(r, 0);
    ASSERT_CONTAINS(r.out, field);
    cli_result_free(&r);
    free(row);
    free(field);
}

static void test_unknown_master_is_a_usage_error_naming_it_without_passwords(void **state) {
    (void)state;
    REQUIRE_CLI();
    const char *url = sentinel_fixture_url(fx);
    const char *name = strstr(url, "/mymaster");
    char *wrong = topo_asprintf("%.*s/nobody%s", (int)(name - url), url, name + 9);
    cli_result r = DLOCK_CLI_RUN(NULL, 20000, "--url", wrong, "inspect", "x");
    ASSERT_STATUS(r, 64);
    ASSERT_CONTAINS(r.err, "no sentinel knows a master named 'nobody'");
    assert_null(strstr(r.err, "s3nt1nel"));
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(NULL, 20000, "--url", wrong, "run", "job", "true");
    assert_int_not_equal(r.status, 0);
    ASSERT_CONTAINS(r.err, "nobody");
    assert_null(strstr(r.err, "s3nt1nel"));
    assert_null(strstr(r.out, "s3nt1nel"));
    cli_result_free(&r);
    free(wrong);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_holds_its_lock_on_the_master_the_sentinels_name),
        cmocka_unit_test(test_inspect_says_which_master_it_read),
        cmocka_unit_test(test_unknown_master_is_a_usage_error_naming_it_without_passwords),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
