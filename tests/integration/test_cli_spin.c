/* SPDX-License-Identifier: MIT */
/* test_cli_spin.c — `dlock run --spin` and what `dlock inspect` says of a spin lock, against
 * a real redis-server: a run holds the spin lock while its command runs (no DLOCK_TEST
 * token: it is not fenced), a second run waits by backoff and gets it after the first, and
 * neither publishes or subscribes; inspect shows the held lock as "lock (reentrant or
 * spin)" (nothing in Redis tells the two apart); --spin with another kind or a semaphore is
 * a usage error.
 *
 * The checks that need the lock held run inside the holding run's own command (a shell
 * that calls the tool again), so no test sleeps to "let it start". */
#include <limits.h>

#include "cli_helpers.h"
#include "core_call.h"
#include "spinlock_helpers.h"

static void test_a_spin_run_holds_the_lock_and_inspect_says_reentrant_or_spin(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_cli_server();
    char script[2 * PATH_MAX + 256];
    snprintf(script, sizeof(script),
             "echo \"token=${DLOCK_TOKEN-none}\"; '%s' inspect job; "
             "'%s' run --spin --wait 300 job -- true; echo \"inner=$?\"",
             cli_path(), cli_path());
    long long pubsub_before = pubsub_calls(f);
    cli_result r = DLOCK_CLI_RUN(f, 20000, "run", "--spin", "job", "--", "sh", "-c", script);
    ASSERT_STATUS(r, 0);
    ASSERT_CONTAINS(r.out, "token=none"); /* not fenced */
    ASSERT_CONTAINS(r.out, "lock (reentrant or spin)");
    ASSERT_CONTAINS(r.out, "held by 1 owner(s), 1 hold(s)");
    ASSERT_CONTAINS(r.out, "inner=73"); /* the second run gave up after its --wait */
    cli_result_free(&r);
    assert_int_equal(redis_fixture_int(f, "EXISTS job"), 0);
    assert_int_equal(pubsub_calls(f), pubsub_before);
    redis_fixture_stop(f);
}

static void test_a_waiting_spin_run_gets_the_lock_after_the_holder_without_pubsub(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_cli_server();
    char out[PATH_MAX], script[3 * PATH_MAX + 256];
    path_in(f, "second.out", out, sizeof(out));
    /* The holder starts a second run in the background, gives it 300 ms to start waiting,
     * looks (inspect: held by one owner, nobody subscribed) and ends; the second then runs
     * its command. That the second did wait is proved by its busy attempts, counted below. */
    snprintf(script, sizeof(script),
             "'%s' run --spin --wait 10000 job -- sh -c 'echo second-ran' > '%s' & "
             "sleep 0.3; '%s' inspect --json job",
             cli_path(), out, cli_path());
    long long pubsub_before = pubsub_calls(f), scripts_before = script_calls(f);
    cli_result r = DLOCK_CLI_RUN(f, 20000, "run", "--spin", "job", "--", "sh", "-c", script);
    ASSERT_STATUS(r, 0);
    assert_valid_json(r.out);
    assert_jq(f, r.out,
              ".kind == \"lock\" and .title == \"lock (reentrant or spin)\" and "
              "(.holders | length) == 1 and .subscribers == 0");
    cli_result_free(&r);
    bool ran = false;
    int64_t until = test_now_ms() + test_slack_ms(5000);
    while (!ran && test_now_ms() < until) {
        char *text = cli_slurp(out);
        ran = strstr(text, "second-ran") != NULL;
        free(text);
        if (!ran)
            test_sleep_ms(20);
    }
    assert_true(ran);
    bool freed = false;
    POLL_UNTIL(freed, redis_fixture_int(f, "EXISTS job") == 0, test_slack_ms(5000));
    assert_true(freed);
    /* an acquire and a release of each run, and at least one busy attempt of the second */
    long long scripts = script_calls(f) - scripts_before;
    printf("# %lld script calls\n", scripts);
    assert_true(scripts >= 5);
    assert_int_equal(pubsub_calls(f), pubsub_before);
    redis_fixture_stop(f);
}

static void test_spin_with_another_kind_or_a_semaphore_is_a_usage_error(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_cli_server();
    cli_result r = DLOCK_CLI_RUN(f, 10000, "run", "--spin", "--fair", "x", "--", "true");
    ASSERT_STATUS(r, 64);
    ASSERT_CONTAINS(r.err, "--spin and --fair: choose one");
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(f, 10000, "run", "--spin", "--semaphore", "s", "--", "true");
    ASSERT_STATUS(r, 64);
    ASSERT_CONTAINS(r.err, "--spin is for locks");
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(f, 10000, "run", "--help");
    ASSERT_STATUS(r, 0);
    ASSERT_CONTAINS(r.out, "--spin");
    cli_result_free(&r);
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 0);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_a_spin_run_holds_the_lock_and_inspect_says_reentrant_or_spin,
                                  kill_spawned),
        cmocka_unit_test_teardown(
            test_a_waiting_spin_run_gets_the_lock_after_the_holder_without_pubsub, kill_spawned),
        cmocka_unit_test_teardown(test_spin_with_another_kind_or_a_semaphore_is_a_usage_error,
                                  kill_spawned),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
