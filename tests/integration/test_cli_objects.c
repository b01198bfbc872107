/* SPDX-License-Identifier: MIT */
/* test_cli_objects.c — the cli tests of test_cli.c, split from it by concern: semaphore and latch.
 * Helpers: tests/support/cli_helpers.h. Every test starts its own server. */
#include "cli_helpers.h"

/* ---- semaphore and latch ---------------------------------------------------------------- */

static void test_semaphore_set_add_available_and_run_with_permits_round_trip(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_cli_server();
    cli_result r = DLOCK_CLI_RUN(f, 10000, "semaphore", "pool", "set", "3");
    ASSERT_STATUS(r, 0);
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(f, 10000, "semaphore", "pool", "set", "5");
    ASSERT_STATUS(r, 1); /* already set: not changed */
    ASSERT_CONTAINS(r.err, "not changed");
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(f, 10000, "semaphore", "pool", "available");
    ASSERT_STATUS(r, 0);
    assert_string_equal(r.out, "3\n");
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(f, 10000, "semaphore", "pool", "add", "-1");
    ASSERT_STATUS(r, 0);
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(f, 10000, "semaphore", "pool", "add", "3");
    ASSERT_STATUS(r, 0);
    cli_result_free(&r);
    assert_int_equal(redis_fixture_int(f, "GET pool"), 5);

    /* run --semaphore holds the permits while the command runs, then gives them back. */
    char script[PATH_MAX + 64];
    snprintf(script, sizeof(script), "'%s' semaphore pool available", cli_path());
    r = DLOCK_CLI_RUN(f, 10000, "run", "--semaphore", "pool", "--permits", "4", "--", "sh", "-c",
                      script);
    ASSERT_STATUS(r, 0);
    assert_string_equal(r.out, "1\n");
    cli_result_free(&r);
    assert_int_equal(redis_fixture_int(f, "GET pool"), 5);
    r = DLOCK_CLI_RUN(f, 10000, "run", "--semaphore", "pool", "--permits", "6", "--wait", "200",
                      "--", "true");
    ASSERT_STATUS(r, 73);
    cli_result_free(&r);
    assert_int_equal(redis_fixture_int(f, "GET pool"), 5);
    r = DLOCK_CLI_RUN(f, 10000, "semaphore", "text-key", "available");
    ASSERT_STATUS(r, 0); /* absent: 0 */
    assert_string_equal(r.out, "0\n");
    cli_result_free(&r);
    redisReply *rep = redis_fixture_cmd(f, "HSET wrongtype a 1");
    freeReplyObject(rep);
    r = DLOCK_CLI_RUN(f, 10000, "semaphore", "wrongtype", "available");
    ASSERT_STATUS(r, 65);
    cli_result_free(&r);
    redis_fixture_stop(f);
}

static void test_latch_set_count_down_count_and_await_round_trip(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_cli_server();
    cli_result r = DLOCK_CLI_RUN(f, 10000, "latch", "gate", "set", "2");
    ASSERT_STATUS(r, 0);
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(f, 10000, "latch", "gate", "set", "5");
    ASSERT_STATUS(r, 1);
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(f, 10000, "latch", "gate", "count");
    ASSERT_STATUS(r, 0);
    assert_string_equal(r.out, "2\n");
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(f, 10000, "latch", "--wait", "200", "gate", "await");
    ASSERT_STATUS(r, 73);
    cli_result_free(&r);

    const char *argv[] = {cli_path(), "latch", "gate", "await", NULL};
    pid_t waiter = cli_spawn(argv, NULL, NULL);
    test_sleep_ms(200);
    r = DLOCK_CLI_RUN(f, 10000, "latch", "gate", "count-down");
    ASSERT_STATUS(r, 0);
    cli_result_free(&r);
    assert_int_equal(waitpid(waiter, NULL, WNOHANG), 0); /* still waiting at 1 */
    r = DLOCK_CLI_RUN(f, 10000, "latch", "gate", "count-down");
    ASSERT_STATUS(r, 0);
    cli_result_free(&r);
    assert_int_equal(cli_wait_exit(waiter, 10000), 0);
    r = DLOCK_CLI_RUN(f, 10000, "latch", "gate", "count");
    assert_string_equal(r.out, "0\n");
    cli_result_free(&r);
    assert_int_equal(redis_fixture_int(f, "EXISTS gate"), 0);
    r = DLOCK_CLI_RUN(f, 10000, "latch", "gate", "await", "--wait", "0");
    ASSERT_STATUS(r, 0); /* finished: at once */
    cli_result_free(&r);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_semaphore_set_add_available_and_run_with_permits_round_trip,
                                  kill_spawned),
        cmocka_unit_test_teardown(test_latch_set_count_down_count_and_await_round_trip,
                                  kill_spawned),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
