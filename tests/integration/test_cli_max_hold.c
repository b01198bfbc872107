/* SPDX-License-Identifier: MIT */
/* test_cli_max_hold.c — `dlock run --max-hold MS`: the watchdog renews the lock until the
 * bound, then the lease runs out, COMMAND is terminated as for a lost lease and dlock
 * exits 75 saying why; the option's misuse is a usage error (64). Helpers:
 * tests/support/cli_helpers.h. Every test starts its own server. */
#include "cli_helpers.h"

#define WATCHDOG_MS "3000"
#define FIRST_LEASE_MS 3000

static void test_max_hold_ends_the_command_when_the_lease_runs_out_with_75(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_cli_server();
    int64_t start = test_now_ms();
    /* the bound is past a renewal tick (every 1000 ms): renewed at least once before it */
    cli_result r = DLOCK_CLI_RUN(f, 60000, "--watchdog-ms", WATCHDOG_MS, "run", "--max-hold",
                                 "2500", "bounded", "--", "sleep", "60");
    int64_t took = test_now_ms() - start;
    ASSERT_STATUS(r, 75);
    ASSERT_CONTAINS(r.err, "dlock: lease on bounded lost (held for --max-hold; its lease then "
                           "ran out); command terminated");
    /* renewed, so held past the first lease (less the watchdog's 32 ms early warning) */
    if (took < FIRST_LEASE_MS - 100)
        fail_msg("ended after %lld ms: before the first lease ran out", (long long)took);
    /* the lease runs out in Redis (dlock is told a few ms early): then nobody holds it */
    int64_t give_up = test_now_ms() + test_slack_ms(10000);
    while (redis_fixture_int(f, "EXISTS bounded") == 1 && test_now_ms() < give_up)
        test_sleep_ms(10);
    assert_int_equal(redis_fixture_int(f, "EXISTS bounded"), 0);
    cli_result_free(&r);

    /* a command that ends before the bound is not touched */
    r = DLOCK_CLI_RUN(f, 60000, "--watchdog-ms", WATCHDOG_MS, "run", "--max-hold", "60000",
                      "bounded", "--", "sh", "-c", "exit 4");
    ASSERT_STATUS(r, 4);
    cli_result_free(&r);
    redis_fixture_stop(f);
}

static void test_max_hold_misuse_is_a_usage_error(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_cli_server();
    static const char *const bad[][2] = {
        {"--max-hold", "0"},
        {"--max-hold", "soon"},
        {"--max-hold", "-5"},
        {"--max-hold", "315360000001"}, /* DLOCK_MAX_TIME_MS + 1 */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cli_result r = DLOCK_CLI_RUN(f, 10000, "run", bad[i][0], bad[i][1], "x", "--", "true");
        ASSERT_STATUS(r, 64);
        ASSERT_CONTAINS(r.err, "--max-hold");
        cli_result_free(&r);
    }
    cli_result r =
        DLOCK_CLI_RUN(f, 10000, "run", "--max-hold", "1000", "--lease", "500", "x", "--", "true");
    ASSERT_STATUS(r, 64);
    ASSERT_CONTAINS(r.err, "a --lease is its own bound");
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(f, 10000, "run", "--max-hold", "1000", "--semaphore", "s", "--", "true");
    ASSERT_STATUS(r, 64);
    ASSERT_CONTAINS(r.err, "a semaphore's permits are not renewed");
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(f, 10000, "run", "--help");
    ASSERT_STATUS(r, 0);
    ASSERT_CONTAINS(r.out, "--max-hold MS");
    cli_result_free(&r);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_max_hold_ends_the_command_when_the_lease_runs_out_with_75,
                                  kill_spawned),
        cmocka_unit_test_teardown(test_max_hold_misuse_is_a_usage_error, kill_spawned),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
