/* SPDX-License-Identifier: MIT */
/* test_cli_operator.c — what the dlock tool tells an operator when a deployment is not what
 * it expects.
 *
 * What is proven:
 * - a `dlock run` whose release is refused (an ACL without the channel the release
 *   publishes on) exits 74, not COMMAND's 0 or 3, says the lock stays held and with what
 *   COMMAND exited; the lock is indeed still there. The same for permits `run --semaphore`
 *   could not give back;
 * - under ?sync_replicas, a run that timed out because no replica acknowledged says
 *   "acquired, but only 0 of 1 replicas acknowledged", not only "not obtained";
 * - `run --semaphore` on a semaphore nobody set says it has never been set, and writes
 *   nothing;
 * - an ACL refusal that names its command gets a hint that grants that command;
 * - `-vv` works as documented (and a bundle of other letters is refused);
 * - `dlock --help` and docs/cli.md's URL table name every URL scheme the library takes. */
#include "cli_helpers.h"

#define NOT_RELEASED 74

/* The URL of the user "op" (made by the caller's ACL SETUSER). */
static char *op_url(redis_fixture *f, redisReply *made) {
    assert_non_null(made);
    assert_int_not_equal(made->type, REDIS_REPLY_ERROR);
    freeReplyObject(made);
    char *url = NULL;
    assert_true(asprintf(&url, "unix://%s?user=op&password=pw", redis_fixture_socket(f)) > 0);
    return url;
}

static void test_run_whose_release_is_refused_exits_74_and_says_the_lock_stays(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    REQUIRE_CLI();
    redis_fixture *f = start_cli_server();
    /* every key and command, no channel: the lock is taken (no wait, no SUBSCRIBE) and its
     * release, which publishes, is refused */
    char *url = op_url(f, redis_fixture_cmd(f, "ACL SETUSER op on >pw ~* resetchannels +@all"));
    cli_result r =
        DLOCK_CLI_RUN(f, 30000, "--url", url, "run", "refused", "--", "sh", "-c", "exit 3");
    ASSERT_STATUS(r, NOT_RELEASED);
    ASSERT_CONTAINS(r.err, "could not release refused");
    ASSERT_CONTAINS(r.err, "stays held until its lease runs out");
    ASSERT_CONTAINS(r.err, "the command exited 3");
    cli_result_free(&r);
    assert_int_equal(redis_fixture_int(f, "EXISTS refused"), 1);

    /* permits: given back by a script that publishes too */
    r = DLOCK_CLI_RUN(f, 30000, "semaphore", "slots", "set", "2"); /* the fixture's own user */
    ASSERT_STATUS(r, 0);
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(f, 30000, "--url", url, "run", "--semaphore", "slots", "--", "true");
    ASSERT_STATUS(r, NOT_RELEASED);
    ASSERT_CONTAINS(r.err, "could not give back 1 permit(s) of slots");
    ASSERT_CONTAINS(r.err, "dlock semaphore slots add 1");
    ASSERT_CONTAINS(r.err, "the command exited 0");
    cli_result_free(&r);
    assert_int_equal(redis_fixture_int(f, "GET slots"), 1);
    free(url);
    redis_fixture_stop(f);
}

static void test_run_under_sync_replicas_says_how_many_replicas_acknowledged(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    REQUIRE_CLI();
    redis_fixture *f = start_cli_server(); /* no replica: WAIT 1 counts 0 */
    char *url = NULL;
    assert_true(asprintf(&url, "unix://%s?sync_replicas=1&sync_timeout_ms=50",
                         redis_fixture_socket(f)) > 0);
    cli_result r =
        DLOCK_CLI_RUN(f, 30000, "--url", url, "run", "--wait", "300", "acked", "--", "true");
    ASSERT_STATUS(r, 73);
    ASSERT_CONTAINS(r.err, "acked: not obtained within 300 ms");
    ASSERT_CONTAINS(r.err, "acquired, but only 0 of 1 replicas acknowledged");
    cli_result_free(&r);
    assert_int_equal(redis_fixture_int(f, "EXISTS acked"), 0); /* given back */

    freeReplyObject(redis_fixture_cmd(f, "SET acked-sem 3"));
    r = DLOCK_CLI_RUN(f, 30000, "--url", url, "run", "--wait", "300", "--semaphore", "acked-sem",
                      "--", "true");
    ASSERT_STATUS(r, 73);
    ASSERT_CONTAINS(r.err, "acked-sem: 1 permit(s) not obtained within 300 ms");
    ASSERT_CONTAINS(r.err, "acquired, but only 0 of 1 replicas acknowledged");
    cli_result_free(&r);
    assert_int_equal(redis_fixture_int(f, "GET acked-sem"), 3); /* given back */
    free(url);
    redis_fixture_stop(f);
}

static void test_run_on_a_semaphore_never_set_says_so_and_writes_nothing(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    REQUIRE_CLI();
    redis_fixture *f = start_cli_server();
    char *before = db_state(f);
    cli_result r =
        DLOCK_CLI_RUN(f, 30000, "run", "--wait", "200", "--semaphore", "unset-sem", "--", "true");
    ASSERT_STATUS(r, 73);
    ASSERT_CONTAINS(r.err, "semaphore unset-sem has never been set");
    ASSERT_CONTAINS(r.err, "dlock semaphore unset-sem set N");
    cli_result_free(&r);
    char *after = db_state(f);
    assert_string_equal(before, after);
    free(before);
    free(after);

    /* a semaphore that is set, even at 0, is not "never set" */
    r = DLOCK_CLI_RUN(f, 30000, "semaphore", "zero-sem", "set", "0");
    ASSERT_STATUS(r, 0);
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(f, 30000, "run", "--wait", "0", "--semaphore", "zero-sem", "--", "true");
    ASSERT_STATUS(r, 73);
    if (strstr(r.err, "never been set"))
        fail_msg("a set semaphore called never set:\n%s", r.err);
    cli_result_free(&r);
    redis_fixture_stop(f);
}

static void test_a_refusal_that_names_its_command_is_answered_with_that_grant(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    REQUIRE_CLI();
    redis_fixture *f = start_cli_server();
    char *url = op_url(f, redis_fixture_cmd(f, "ACL SETUSER op on >pw ~* &* +@all -get"));
    cli_result r = DLOCK_CLI_RUN(f, 30000, "--url", url, "semaphore", "counted", "available");
    ASSERT_STATUS(r, 77);
    ASSERT_CONTAINS(r.err, "grant it: ACL SETUSER op +get");
    if (strstr(r.err, "scripting"))
        fail_msg("the hint names +@scripting for a refused GET:\n%s", r.err);
    cli_result_free(&r);
    free(url);

    /* a script's refusal: Redis 7.0 names no command, the script's line does */
    url = op_url(f, redis_fixture_cmd(f, "ACL SETUSER op reset on >pw ~* &* +@all -pexpire"));
    r = DLOCK_CLI_RUN(f, 30000, "--url", url, "run", "expiring", "--", "true");
    ASSERT_STATUS(r, 77);
    ASSERT_CONTAINS(r.err, "grant it: ACL SETUSER op +pexpire");
    cli_result_free(&r);
    free(url);
    redis_fixture_stop(f);
}

static void test_vv_is_two_v_and_other_bundles_are_refused(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    REQUIRE_CLI();
    redis_fixture *f = start_cli_server();
    cli_result r = DLOCK_CLI_RUN(f, 30000, "-vv", "semaphore", "verbose", "available");
    ASSERT_STATUS(r, 0);
    ASSERT_CONTAINS(r.out, "0");
    ASSERT_CONTAINS(r.err, "dlock: [info]");
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(f, 30000, "semaphore", "verbose", "available", "-vv");
    ASSERT_STATUS(r, 0);
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(f, 30000, "-vh", "semaphore", "verbose", "available");
    ASSERT_STATUS(r, 64);
    ASSERT_CONTAINS(r.err, "unknown option '-vh'");
    cli_result_free(&r);
    redis_fixture_stop(f);
}

static const char *const schemes[] = {
    "redis://",           "rediss://",        "unix://",           "redis-sentinel://",
    "rediss-sentinel://", "redis-cluster://", "rediss-cluster://",
};

static void test_help_and_the_url_table_name_every_scheme(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    REQUIRE_CLI();
    cli_result r = DLOCK_CLI_RUN(NULL, 30000, "--help");
    ASSERT_STATUS(r, 0);
    const char *source = getenv("DLOCK_SOURCE_DIR");
    assert_non_null(source);
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/docs/cli.md", source);
    char *doc = cli_slurp(path);
    const char *table = strstr(doc, "The URL forms");
    assert_non_null(table);
    for (size_t i = 0; i < sizeof(schemes) / sizeof(*schemes); i++) {
        ASSERT_CONTAINS(r.out, schemes[i]);
        char row[64];
        snprintf(row, sizeof(row), "| `%s", schemes[i]);
        ASSERT_CONTAINS(table, row);
    }
    free(doc);
    cli_result_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(
            test_run_whose_release_is_refused_exits_74_and_says_the_lock_stays, kill_spawned),
        cmocka_unit_test_teardown(test_run_under_sync_replicas_says_how_many_replicas_acknowledged,
                                  kill_spawned),
        cmocka_unit_test_teardown(test_run_on_a_semaphore_never_set_says_so_and_writes_nothing,
                                  kill_spawned),
        cmocka_unit_test_teardown(test_a_refusal_that_names_its_command_is_answered_with_that_grant,
                                  kill_spawned),
        cmocka_unit_test_teardown(test_vv_is_two_v_and_other_bundles_are_refused, kill_spawned),
        cmocka_unit_test_teardown(test_help_and_the_url_table_name_every_scheme, kill_spawned),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
