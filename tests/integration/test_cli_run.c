/* SPDX-License-Identifier: MIT */
/* test_cli_run.c — the cli tests of test_cli.c, split from it by concern: dlock run. Helpers:
 * tests/support/cli_helpers.h. Every test starts its own server. */
#include "cli_helpers.h"

/* ---- dlock run -------------------------------------------------------------------------- */

static void test_run_passes_the_exit_status_and_128_plus_the_signal_through(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_cli_server();
    cli_result r = DLOCK_CLI_RUN(f, 10000, "run", "status", "--", "sh", "-c", "exit 7");
    ASSERT_STATUS(r, 7);
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(f, 10000, "run", "status", "true"); /* no "--": flock style */
    ASSERT_STATUS(r, 0);
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(f, 10000, "run", "status", "--", "sh", "-c", "kill -TERM $$");
    ASSERT_STATUS(r, 128 + SIGTERM);
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(f, 10000, "run", "status", "--", "/no/such/command");
    ASSERT_STATUS(r, 127);
    ASSERT_CONTAINS(r.err, "/no/such/command");
    cli_result_free(&r);
    /* Options after NAME when "--" ends them. */
    r = DLOCK_CLI_RUN(f, 10000, "run", "status", "--wait", "1000", "--", "sh", "-c", "exit 3");
    ASSERT_STATUS(r, 3);
    cli_result_free(&r);
    /* Released every time: nothing holds the lock now. */
    assert_int_equal(redis_fixture_int(f, "EXISTS status"), 0);
    redis_fixture_stop(f);
}

static void test_run_exports_dlock_name_and_a_token_that_increases(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_cli_server();
    unsigned long long last = 0;
    for (int i = 0; i < 4; i++) {
        cli_result r = DLOCK_CLI_RUN(f, 10000, "run", "fenced-job", "--", "sh", "-c",
                                     "echo \"$DLOCK_NAME $DLOCK_TOKEN\"");
        ASSERT_STATUS(r, 0);
        char name[64];
        unsigned long long token = 0;
        if (sscanf(r.out, "%63s %llu", name, &token) != 2)
            fail_msg("no name and token in '%s'", r.out);
        assert_string_equal(name, "fenced-job");
        if (token <= last)
            fail_msg("token %llu after %llu", token, last);
        last = token;
        cli_result_free(&r);
    }
    /* The token is the fenced lock's counter (REDIS_LAYOUT.md). */
    assert_int_equal(redis_fixture_int(f, "GET redisson_lock_token:{fenced-job}"), (long long)last);
    redis_fixture_stop(f);
}

/* One worker: M sections in a row, each through its own `dlock run`. The section appends
 * "enter W <ns>" and "exit W <ns>" to LOG and bumps COUNT with a read, a pause and a write,
 * which loses updates if two sections ever overlap. */
static const char worker_script[] =
    "dlock=$1 name=$2 log=$3 count=$4 w=$5 m=$6; i=0\n"
    "while [ $i -lt $m ]; do\n"
    "  \"$dlock\" run \"$name\" -- sh -c '\n"
    "    echo \"enter $1 $(date +%s%N)\" >> \"$2\"\n"
    "    n=$(cat \"$3\"); sleep 0.02; echo $((n + 1)) > \"$3\"\n"
    "    echo \"exit $1 $(date +%s%N)\" >> \"$2\"' section \"$w\" \"$log\" \"$count\" || exit 1\n"
    "  i=$((i + 1))\n"
    "done\n";

static void test_two_concurrent_runs_on_one_name_never_overlap(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S * 2, __func__);
    redis_fixture *f = start_cli_server();
    char log[PATH_MAX], count[PATH_MAX];
    path_in(f, "sections.log", log, sizeof(log));
    path_in(f, "count", count, sizeof(count));
    FILE *fp = fopen(count, "w");
    assert_non_null(fp);
    fputs("0\n", fp);
    fclose(fp);
    long m = test_scaled(10) < 3 ? 3 : test_scaled(10);
    char m_text[16];
    snprintf(m_text, sizeof(m_text), "%ld", m);
    pid_t workers[2];
    for (int w = 0; w < 2; w++) {
        const char *argv[] = {"/bin/sh",          "-c",          worker_script, "worker",
                              cli_path(),         "shared-name", log,           count,
                              w == 0 ? "A" : "B", m_text,        NULL};
        workers[w] = cli_spawn(argv, NULL, NULL);
    }
    for (int w = 0; w < 2; w++)
        assert_int_equal(cli_wait_exit(workers[w], 60000), 0);

    /* The log: enter X, exit X, enter Y, exit Y, ... with time never going back. */
    char *text = cli_slurp(log);
    char *save = NULL;
    int sections = 0, per_worker[2] = {0, 0};
    char inside = 0;
    unsigned long long last_ns = 0;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char what[8], who = 0;
        unsigned long long ns = 0;
        if (sscanf(line, "%7s %c %llu", what, &who, &ns) != 3)
            fail_msg("bad log line '%s'", line);
        if (ns < last_ns)
            fail_msg("time went back at '%s'", line);
        last_ns = ns;
        if (strcmp(what, "enter") == 0) {
            if (inside)
                fail_msg("%c entered while %c was inside (overlap) at '%s'", who, inside, line);
            inside = who;
        } else {
            if (inside != who)
                fail_msg("%c left but %c was inside at '%s'", who, inside ? inside : '-', line);
            inside = 0;
            sections++;
            per_worker[who == 'A' ? 0 : 1]++;
        }
    }
    free(text);
    assert_int_equal(inside, 0);
    assert_int_equal(sections, 2 * m);
    assert_int_equal(per_worker[0], m);
    assert_int_equal(per_worker[1], m);
    char *final = cli_slurp(count);
    assert_int_equal(atol(final), 2 * m); /* no update lost */
    free(final);
    assert_int_equal(redis_fixture_int(f, "EXISTS shared-name"), 0);
    redis_fixture_stop(f);
}

static void test_run_gives_up_after_wait_with_73(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_cli_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = NULL;
    assert_int_equal(dlock_lock_new(c, "busy", &l), DLOCK_OK);
    assert_int_equal(dlock_lock_acquire(l, DLOCK_WATCHDOG), DLOCK_OK);

    int64_t start = test_now_ms();
    cli_result r =
        DLOCK_CLI_RUN(f, 10000, "run", "--wait", "300", "busy", "--", "sh", "-c", "echo ran");
    int64_t took = test_now_ms() - start;
    ASSERT_STATUS(r, 73);
    ASSERT_CONTAINS(r.err, "not obtained within 300 ms");
    assert_string_equal(r.out, ""); /* the command never ran */
    if (took < 300)
        fail_msg("gave up after %lld ms, before its 300 ms", (long long)took);
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(f, 10000, "run", "--wait", "0", "busy", "--", "true");
    ASSERT_STATUS(r, 73);
    cli_result_free(&r);

    assert_int_equal(dlock_lock_release(l), DLOCK_OK);
    r = DLOCK_CLI_RUN(f, 10000, "run", "--wait", "0", "busy", "--", "true");
    ASSERT_STATUS(r, 0);
    cli_result_free(&r);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* Is pid gone (or a zombie nobody has reaped yet)? */
static bool process_gone(pid_t pid) {
    if (kill(pid, 0) != 0)
        return errno == ESRCH;
    char path[64], buf[256];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *fp = fopen(path, "r");
    if (!fp)
        return true;
    bool zombie = false;
    if (fgets(buf, sizeof(buf), fp)) {
        char *close = strrchr(buf, ')');
        zombie = close && close[1] == ' ' && (close[2] == 'Z' || close[2] == 'X');
    }
    fclose(fp);
    return zombie;
}

static void test_lost_lease_terminates_the_command_and_what_it_started_and_exits_75(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_cli_server();
    setenv("DLOCK_WATCHDOG_MS", "600", 1); /* renewed every 200 ms */
    char started[PATH_MAX], finished[PATH_MAX], sleeper[PATH_MAX];
    path_in(f, "started", started, sizeof(started));
    path_in(f, "finished", finished, sizeof(finished));
    path_in(f, "sleeper.pid", sleeper, sizeof(sleeper));
    char script[3 * PATH_MAX + 128];
    snprintf(script, sizeof(script),
             "sleep 30 & echo $! > '%s'; echo $DLOCK_TOKEN > '%s'; wait; echo done > '%s'", sleeper,
             started, finished);
    char out[PATH_MAX], err[PATH_MAX];
    path_in(f, "run.out", out, sizeof(out));
    path_in(f, "run.err", err, sizeof(err));
    const char *argv[] = {cli_path(), "run", "doomed", "--", "sh", "-c", script, NULL};
    pid_t pid = cli_spawn(argv, out, err);
    wait_for_file(started, 10000);
    test_sleep_ms(50); /* the pid file is written before the token file */
    char *sleeper_text = cli_slurp(sleeper);
    pid_t sleeper_pid = (pid_t)atol(sleeper_text);
    free(sleeper_text);
    assert_true(sleeper_pid > 0);
    assert_int_equal(redis_fixture_int(f, "PTTL doomed") > 0, 1);
    assert_true(redis_fixture_int(f, "PTTL doomed") <= 600); /* $DLOCK_WATCHDOG_MS honoured */

    int64_t deleted_at = test_now_ms();
    assert_int_equal(redis_fixture_int(f, "DEL doomed"), 1);
    int status = cli_wait_exit(pid, 10000);
    int64_t took = test_now_ms() - deleted_at;
    char *said = cli_slurp(err);
    if (status != 75)
        fail_msg("exit %d, expected 75; stderr:\n%s", status, said);
    ASSERT_CONTAINS(said, "dlock: lease on doomed lost (");
    ASSERT_CONTAINS(said, "); command terminated");
    free(said);
    assert_false(file_exists(finished)); /* the command did not run on */
    if (took > test_slack_ms(3000))
        fail_msg("dlock exited %lld ms after the key was deleted", (long long)took);
    /* The sleep the command started was in its process group: gone too. */
    int64_t until = test_now_ms() + test_slack_ms(3000);
    while (!process_gone(sleeper_pid) && test_now_ms() < until)
        test_sleep_ms(10);
    if (!process_gone(sleeper_pid)) {
        kill(sleeper_pid, SIGKILL);
        fail_msg("the command's child %d outlived the lost lease", (int)sleeper_pid);
    }

    /* --watchdog-ms works the same, and a fixed --lease that runs out too. */
    unsetenv("DLOCK_WATCHDOG_MS");
    int64_t start = test_now_ms();
    cli_result r = DLOCK_CLI_RUN(f, 10000, "run", "--lease", "400", "short", "--", "sleep", "20");
    ASSERT_STATUS(r, 75);
    ASSERT_CONTAINS(r.err, "its lease of 400 ms ran out");
    if (test_now_ms() - start > 5000)
        fail_msg("the fixed lease ended the command only after %lld ms",
                 (long long)(test_now_ms() - start));
    cli_result_free(&r);
    redis_fixture_stop(f);
}

static void test_command_ignoring_sigterm_is_killed_after_kill_after(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_cli_server();
    int64_t start = test_now_ms();
    cli_result r =
        DLOCK_CLI_RUN(f, 15000, "--watchdog-ms", "600", "run", "--lease", "300", "--kill-after",
                      "300", "stubborn", "--", "sh", "-c",
                      "trap '' TERM; i=0; while [ $i -lt 200 ]; do i=$((i+1)); sleep 0.1; "
                      "done");
    int64_t took = test_now_ms() - start;
    ASSERT_STATUS(r, 75);
    if (took > 6000)
        fail_msg("a command ignoring SIGTERM ran %lld ms; --kill-after 300 should end it",
                 (long long)took);
    cli_result_free(&r);
    redis_fixture_stop(f);
}

static void test_sigterm_to_dlock_reaches_the_command_and_the_lock_is_released(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_cli_server();
    char started[PATH_MAX], got[PATH_MAX];
    path_in(f, "started", started, sizeof(started));
    path_in(f, "got", got, sizeof(got));
    char script[2 * PATH_MAX + 128];
    snprintf(script, sizeof(script),
             "trap 'echo TERM > \"%s\"; exit 5' TERM; touch '%s'; "
             "while :; do sleep 0.05; done",
             got, started);
    const char *argv[] = {cli_path(), "run", "signalled", "--", "sh", "-c", script, NULL};
    pid_t pid = cli_spawn(argv, NULL, NULL);
    wait_for_file(started, 10000);
    assert_int_equal(redis_fixture_int(f, "EXISTS signalled"), 1);
    kill(pid, SIGTERM);
    assert_int_equal(cli_wait_exit(pid, 10000), 5); /* the command's own status */
    assert_true(file_exists(got));
    assert_int_equal(redis_fixture_int(f, "EXISTS signalled"), 0); /* released */

    /* While waiting for the lock, a signal ends the wait: 128 + 15, nothing left held. */
    dlock_client *c = connect_client(f);
    dlock_lock *l = NULL;
    assert_int_equal(dlock_lock_new(c, "signalled", &l), DLOCK_OK);
    assert_int_equal(dlock_lock_acquire(l, DLOCK_WATCHDOG), DLOCK_OK);
    const char *waiting[] = {cli_path(), "run", "signalled", "--", "true", NULL};
    pid = cli_spawn(waiting, NULL, NULL);
    test_sleep_ms(300);
    kill(pid, SIGTERM);
    assert_int_equal(cli_wait_exit(pid, 10000), 128 + SIGTERM);
    assert_int_equal(redis_fixture_int(f, "HLEN signalled"), 1); /* only our hold */
    assert_int_equal(dlock_lock_release(l), DLOCK_OK);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* Waits until COMMAND of a `dlock run` touched its file, i.e. holds the lock. */
static pid_t start_holder(redis_fixture *f, const char *kind_option, const char *name,
                          const char *started, const char *go) {
    char script[2 * PATH_MAX + 64];
    snprintf(script, sizeof(script), "touch '%s'; while [ ! -e '%s' ]; do sleep 0.02; done",
             started, go);
    const char *argv[] = {cli_path(), "run", kind_option, name, "--", "sh", "-c", script, NULL};
    pid_t pid = cli_spawn(argv, NULL, NULL);
    (void)f;
    wait_for_file(started, 10000);
    return pid;
}

static void test_read_runs_share_a_write_run_excludes_and_fair_runs_queue(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_cli_server();
    char started[PATH_MAX], go[PATH_MAX];
    path_in(f, "started", started, sizeof(started));
    path_in(f, "go", go, sizeof(go));

    /* Readers share; a writer waits for them. */
    pid_t reader = start_holder(f, "--read", "report", started, go);
    cli_result r = DLOCK_CLI_RUN(f, 10000, "run", "--read", "--wait", "0", "report", "--", "true");
    ASSERT_STATUS(r, 0);
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(f, 10000, "run", "--write", "--wait", "300", "report", "--", "true");
    ASSERT_STATUS(r, 73);
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(f, 10000, "inspect", "--json", "report");
    ASSERT_STATUS(r, 0);
    assert_valid_json(r.out);
    ASSERT_CONTAINS(r.out, "\"kind\":\"rwlock\"");
    ASSERT_CONTAINS(r.out, "\"mode\":\"read\"");
    assert_jq(f, r.out, ".holders | length == 1 and .[0].mode == \"read\" and .[0].holds == 1");
    cli_result_free(&r);
    FILE *fp = fopen(go, "w");
    assert_non_null(fp);
    fclose(fp);
    assert_int_equal(cli_wait_exit(reader, 10000), 0);
    unlink(go);
    unlink(started);

    /* A writer excludes readers. */
    pid_t writer = start_holder(f, "--write", "report", started, go);
    r = DLOCK_CLI_RUN(f, 10000, "run", "--read", "--wait", "300", "report", "--", "true");
    ASSERT_STATUS(r, 73);
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(f, 10000, "inspect", "report");
    ASSERT_CONTAINS(r.out, "held for write");
    cli_result_free(&r);
    fp = fopen(go, "w");
    assert_non_null(fp);
    fclose(fp);
    assert_int_equal(cli_wait_exit(writer, 10000), 0);
    assert_int_equal(redis_fixture_int(f, "EXISTS report"), 0);
    unlink(go);
    unlink(started);

    /* Fair: a second run waits in the queue, which inspect shows, and gets it next. */
    pid_t holder = start_holder(f, "--fair", "line", started, go);
    const char *argv[] = {cli_path(), "run", "--fair", "line", "--", "true", NULL};
    pid_t next = cli_spawn(argv, NULL, NULL);
    bool queued = false;
    int64_t until = test_now_ms() + 10000;
    while (!queued && test_now_ms() < until) {
        r = DLOCK_CLI_RUN(f, 10000, "inspect", "--json", "line");
        queued = strstr(r.out, "\"queue\":[{") != NULL;
        if (queued) {
            assert_valid_json(r.out);
            ASSERT_CONTAINS(r.out, "\"kind\":\"fair_lock\"");
            assert_jq(f, r.out, ".queue | length == 1");
        }
        cli_result_free(&r);
        if (!queued)
            test_sleep_ms(20);
    }
    assert_true(queued);
    fp = fopen(go, "w");
    assert_non_null(fp);
    fclose(fp);
    assert_int_equal(cli_wait_exit(holder, 10000), 0);
    assert_int_equal(cli_wait_exit(next, 10000), 0);
    assert_int_equal(redis_fixture_int(f, "EXISTS line"), 0);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_run_passes_the_exit_status_and_128_plus_the_signal_through,
                                  kill_spawned),
        cmocka_unit_test_teardown(test_run_exports_dlock_name_and_a_token_that_increases,
                                  kill_spawned),
        cmocka_unit_test_teardown(test_two_concurrent_runs_on_one_name_never_overlap, kill_spawned),
        cmocka_unit_test_teardown(test_run_gives_up_after_wait_with_73, kill_spawned),
        cmocka_unit_test_teardown(
            test_lost_lease_terminates_the_command_and_what_it_started_and_exits_75, kill_spawned),
        cmocka_unit_test_teardown(test_command_ignoring_sigterm_is_killed_after_kill_after,
                                  kill_spawned),
        cmocka_unit_test_teardown(
            test_sigterm_to_dlock_reaches_the_command_and_the_lock_is_released, kill_spawned),
        cmocka_unit_test_teardown(test_read_runs_share_a_write_run_excludes_and_fair_runs_queue,
                                  kill_spawned),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
