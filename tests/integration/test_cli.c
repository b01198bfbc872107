/* test_cli.c — the dlock command-line tool (tools/), driven as a user drives it, against a
 * real redis-server.
 *
 * The tool is found in $DLOCK_CLI, else beside this program's build tree
 * (<build>/tests/bin/integration/integration_cli -> <build>/tools/dlock); when it was not
 * built (DLOCK_BUILD_TOOLS=OFF) every test is skipped, unless DLOCK_CLI names it.
 *
 * What is proven: two `dlock run` loops on one name never overlap (enter/exit markers with
 * timestamps and a non-atomic counter in files); the command's exit status (and 128+signal)
 * comes back; DLOCK_TOKEN and DLOCK_NAME are exported and tokens increase; --wait gives up
 * with 73; --read runs share, --write excludes them, --fair runs queue (seen by inspect); a lost
 * lease (key deleted while the command sleeps; watchdog_ms from $DLOCK_WATCHDOG_MS and
 * --watchdog-ms) terminates the command, what it started and dlock with 75, and so does a fixed
 * --lease running out; SIGTERM to dlock reaches the command and the lock is released; `inspect`
 * shows the holder (client id, owner, hold count) of a lock held through the library, and every
 * kind it knows, with valid --json; `release
 * --force` frees a held lock (plain, read-write, fair) and refuses what is not a lock; semaphore
 * set/add/available, run --semaphore, latch set/count-down/count/await round-trip; every --help
 * exits 0; bad usage exits 64; an unreachable Redis 69; a refused password 77.
 *
 * Each test starts its own server; the tool reaches it through DLOCK_URL (or --url).
 * Processes the tests start are recorded and SIGKILLed by the teardown if a test fails. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "dlock.h"
#include "cli_run.h"
#include "harness.h"
#include "redis_fixture.h"
#include "test_util.h"

#define BUDGET_S 90

extern char **environ;

/* Teardown: nothing a failed test started outlives it. */
static int kill_spawned(void **state) {
    (void)state;
    cli_kill_spawned();
    unsetenv("DLOCK_WATCHDOG_MS");
    return 0;
}

/* Paths of files in the server's temp directory (removed with it). */
static const char *path_in(redis_fixture *f, const char *file, char *buf, size_t size) {
    snprintf(buf, size, "%s/%s", redis_fixture_dir(f), file);
    return buf;
}

static redis_fixture *start_server_with(const redis_fixture_opts *o) {
    redis_fixture *f = NULL;
    assert_int_equal(redis_fixture_start(o, &f), 0);
    setenv("DLOCK_URL", redis_fixture_unix_url(f), 1);
    return f;
}

static redis_fixture *start_cli_server(void) {
    return start_server_with(NULL);
}

static bool file_exists(const char *path) {
    return access(path, F_OK) == 0;
}

/* Polls until path exists; fails after timeout_ms. */
static void wait_for_file(const char *path, int64_t timeout_ms) {
    int64_t until = test_now_ms() + test_slack_ms(timeout_ms);
    while (!file_exists(path)) {
        if (test_now_ms() > until)
            fail_msg("%s did not appear within %lld ms", path, (long long)timeout_ms);
        test_sleep_ms(5);
    }
}

/* ---- a minimal JSON checker (RFC 8259 grammar; enough to prove --json parses) ---------- */

static const char *json_value(const char *p);

static const char *json_ws(const char *p) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return p;
}

static const char *json_string(const char *p) {
    if (*p != '"')
        return NULL;
    for (p++; *p && *p != '"'; p++) {
        if ((unsigned char)*p < 0x20)
            return NULL;
        if (*p == '\\') {
            p++;
            if (*p == 'u') {
                for (int i = 1; i <= 4; i++)
                    if (!strchr("0123456789abcdefABCDEF", p[i]) || !p[i])
                        return NULL;
                p += 4;
            } else if (!*p || !strchr("\"\\/bfnrt", *p)) {
                return NULL;
            }
        }
    }
    return *p == '"' ? p + 1 : NULL;
}

static const char *json_number(const char *p) {
    const char *start = p;
    if (*p == '-')
        p++;
    if (*p < '0' || *p > '9')
        return NULL;
    while (*p >= '0' && *p <= '9')
        p++;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    return p > start ? p : NULL;
}

static const char *json_value(const char *p) {
    p = json_ws(p);
    if (*p == '{' || *p == '[') {
        char close = *p == '{' ? '}' : ']';
        bool object = *p == '{';
        p = json_ws(p + 1);
        if (*p == close)
            return p + 1;
        for (;;) {
            if (object) {
                p = json_string(json_ws(p));
                if (!p)
                    return NULL;
                p = json_ws(p);
                if (*p++ != ':')
                    return NULL;
            }
            p = json_value(p);
            if (!p)
                return NULL;
            p = json_ws(p);
            if (*p == close)
                return p + 1;
            if (*p++ != ',')
                return NULL;
        }
    }
    if (*p == '"')
        return json_string(p);
    if (strncmp(p, "true", 4) == 0)
        return p + 4;
    if (strncmp(p, "false", 5) == 0)
        return p + 5;
    if (strncmp(p, "null", 4) == 0)
        return p + 4;
    return json_number(p);
}

static void assert_valid_json(const char *text) {
    const char *end = json_value(text);
    if (!end || *json_ws(end) != '\0')
        fail_msg("not one valid JSON value:\n%s", text);
}

/* jq (scripts/deps.sh installs it), when present, must agree with expr (jq -e). */
static void assert_jq(redis_fixture *f, const char *json, const char *expr) {
    const char *jq = NULL;
    static const char *const places[] = {"/usr/bin/jq", "/usr/local/bin/jq", "/bin/jq"};
    for (size_t i = 0; i < sizeof(places) / sizeof(places[0]); i++)
        if (access(places[i], X_OK) == 0)
            jq = places[i];
    if (!jq)
        return;
    char in_path[PATH_MAX], out_path[PATH_MAX];
    path_in(f, "jq.in", in_path, sizeof(in_path));
    path_in(f, "jq.out", out_path, sizeof(out_path));
    FILE *fp = fopen(in_path, "w");
    assert_non_null(fp);
    fputs(json, fp);
    fclose(fp);
    const char *argv[] = {jq, "-e", expr, in_path, NULL};
    int status = cli_wait_exit(cli_spawn(argv, out_path, out_path), 10000);
    if (status != 0) {
        char *said = cli_slurp(out_path);
        fail_msg("jq -e '%s' exited %d (%s) on:\n%s", expr, status, said, json);
    }
}

/* ---- help and usage --------------------------------------------------------------------- */

static void test_help_of_every_command_exits_0_and_version_matches_the_header(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_cli_server();
    static const char *const commands[] = {"run", "inspect", "release", "semaphore", "latch"};
    cli_result r = DLOCK_CLI_RUN(f, 5000, "--help");
    ASSERT_STATUS(r, 0);
    ASSERT_CONTAINS(r.out, "Usage: dlock");
    ASSERT_CONTAINS(r.out, "Exit codes:");
    ASSERT_CONTAINS(r.out, "75 ");
    cli_result_free(&r);
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        r = DLOCK_CLI_RUN(f, 5000, commands[i], "--help");
        ASSERT_STATUS(r, 0);
        char usage[64];
        snprintf(usage, sizeof(usage), "Usage: dlock %s", commands[i]);
        ASSERT_CONTAINS(r.out, usage);
        cli_result_free(&r);
        r = DLOCK_CLI_RUN(f, 5000, commands[i], "-h");
        ASSERT_STATUS(r, 0);
        cli_result_free(&r);
    }
    r = DLOCK_CLI_RUN(f, 5000, "--version");
    ASSERT_STATUS(r, 0);
    char want[64];
    snprintf(want, sizeof(want), "dlock %s\n", DLOCK_VERSION_STRING);
    assert_string_equal(r.out, want);
    cli_result_free(&r);
    redis_fixture_stop(f);
}

static void test_bad_usage_exits_64_with_a_message(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_cli_server();
    static const char *const cases[][8] = {
        {NULL},
        {"frobnicate", NULL},
        {"--no-such-option", NULL},
        {"run", NULL},
        {"run", "name", NULL},
        {"run", "--wait", "soon", "name", "--", "true", NULL},
        {"run", "--wait", NULL},
        {"run", "--lease", "100", "--watchdog", "name", "--", "true", NULL},
        {"run", "--permits", "2", "name", "--", "true", NULL},
        {"run", "--semaphore", "s", "--lease", "5", "--", "true", NULL},
        {"run", "name", "other", "--", "true", NULL},
        {"run", "--watchdog-ms", "abc", "name", "--", "true", NULL},
        {"inspect", NULL},
        {"inspect", "--as", "lock", "x", NULL},
        {"release", "x", NULL},
        {"semaphore", "s", NULL},
        {"semaphore", "s", "grow", "2", NULL},
        {"semaphore", "s", "add", NULL},
        {"latch", "l", "set", "many", NULL},
        {"latch", "l", "count-down", "--wait", "5", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cli_result r = cli_run_argv(f, 5000, cases[i]);
        if (r.status != 64)
            fail_msg("case %zu (dlock %s %s %s ...): exit %d, expected 64\n%s", i,
                     cases[i][0] ? cases[i][0] : "", cases[i][0] && cases[i][1] ? cases[i][1] : "",
                     cases[i][0] && cases[i][1] && cases[i][2] ? cases[i][2] : "", r.status, r.err);
        assert_true(strlen(r.err) > 0);
        ASSERT_CONTAINS(r.err, "dlock");
        cli_result_free(&r);
    }
    /* One lock kind at a time. */
    cli_result r = DLOCK_CLI_RUN(f, 5000, "run", "--read", "--write", "name", "--", "true");
    ASSERT_STATUS(r, 64);
    ASSERT_CONTAINS(r.err, "choose one");
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(f, 5000, "run", "--fair", "--read", "name", "--", "true");
    ASSERT_STATUS(r, 64);
    ASSERT_CONTAINS(r.err, "choose one");
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(f, 5000, "run", "--fair", "--semaphore", "s", "--", "true");
    ASSERT_STATUS(r, 64);
    cli_result_free(&r);
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 0); /* nothing was touched */
    redis_fixture_stop(f);
}

static void test_unreachable_redis_exits_69_and_a_refused_password_77(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture_opts o = {.requirepass = "s3cret pass"};
    redis_fixture *f = start_server_with(&o);
    char gone[PATH_MAX + 16];
    snprintf(gone, sizeof(gone), "unix://%s/no-such.sock", redis_fixture_dir(f));
    static const char *const commands[][4] = {
        {"run", "x", "true", NULL},        {"inspect", "x", NULL},
        {"release", "--force", "x", NULL}, {"semaphore", "x", "available", NULL},
        {"latch", "x", "count", NULL},
    };
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        const char *argv[8] = {"--url", gone, "--connect-timeout", "2000"};
        for (int k = 0; commands[i][k]; k++)
            argv[4 + k] = commands[i][k];
        cli_result r = cli_run_argv(f, 10000, argv);
        if (r.status != 69)
            fail_msg("dlock %s with no server: exit %d, expected 69\n%s", commands[i][0], r.status,
                     r.err);
        ASSERT_CONTAINS(r.err, "no-such.sock");
        cli_result_free(&r);
    }
    /* The fixture's URL carries the password: it works, through DLOCK_URL and --url. */
    cli_result r = DLOCK_CLI_RUN(f, 10000, "semaphore", "x", "available");
    ASSERT_STATUS(r, 0);
    assert_string_equal(r.out, "0\n");
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(f, 10000, "--url", redis_fixture_unix_url(f), "inspect", "x");
    ASSERT_STATUS(r, 0);
    cli_result_free(&r);
    /* A wrong one is refused: 77. */
    char wrong[PATH_MAX + 32];
    snprintf(wrong, sizeof(wrong), "unix://%s?password=wrong", redis_fixture_socket(f));
    r = DLOCK_CLI_RUN(f, 10000, "--url", wrong, "run", "x", "--", "true");
    ASSERT_STATUS(r, 77);
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(f, 10000, "--url", wrong, "inspect", "x");
    ASSERT_STATUS(r, 77);
    cli_result_free(&r);
    redis_fixture_stop(f);
}

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
                              cli_path(),           "shared-name", log,           count,
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
    cli_result r = DLOCK_CLI_RUN(f, 15000, "--watchdog-ms", "600", "run", "--lease", "300",
                             "--kill-after", "300", "stubborn", "--", "sh", "-c",
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

/* ---- inspect and release ---------------------------------------------------------------- */

static void test_inspect_shows_the_holder_client_id_owner_and_count_and_valid_json(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_cli_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = NULL;
    assert_int_equal(dlock_fencedlock_new(c, "orders", &l), DLOCK_OK);
    assert_int_equal(dlock_lock_acquire(l, DLOCK_WATCHDOG), DLOCK_OK);
    assert_int_equal(dlock_lock_acquire(l, DLOCK_WATCHDOG), DLOCK_OK); /* 2 holds */
    char owner[32];
    snprintf(owner, sizeof(owner), "%llu", (unsigned long long)dlock_thread_owner());

    cli_result r = DLOCK_CLI_RUN(f, 10000, "inspect", "orders");
    ASSERT_STATUS(r, 0);
    ASSERT_CONTAINS(r.out, "lock (fenced)");
    ASSERT_CONTAINS(r.out, dlock_client_id(c));
    ASSERT_CONTAINS(r.out, owner);
    ASSERT_CONTAINS(r.out, "held by 1 owner(s), 2 hold(s)");
    ASSERT_CONTAINS(r.out, "token      2");
    cli_result_free(&r);

    r = DLOCK_CLI_RUN(f, 10000, "inspect", "--json", "orders");
    ASSERT_STATUS(r, 0);
    assert_valid_json(r.out);
    char want[160];
    snprintf(want, sizeof(want), "\"client_id\":\"%s\",\"owner\":\"%s\",\"holds\":2",
             dlock_client_id(c), owner);
    ASSERT_CONTAINS(r.out, want);
    ASSERT_CONTAINS(r.out, "\"kind\":\"lock\"");
    ASSERT_CONTAINS(r.out, "\"fenced\":true,\"token\":2");
    char expr[256];
    snprintf(expr, sizeof(expr),
             ".kind == \"lock\" and .holders[0].client_id == \"%s\" and .holders[0].owner == "
             "\"%s\" and .holders[0].holds == 2 and .ttl_ms > 0",
             dlock_client_id(c), owner);
    assert_jq(f, r.out, expr);
    cli_result_free(&r);

    /* A name holding nothing; and the lock once released: free, its token kept. */
    r = DLOCK_CLI_RUN(f, 10000, "inspect", "--json", "nothing-here");
    ASSERT_STATUS(r, 0);
    assert_valid_json(r.out);
    ASSERT_CONTAINS(r.out, "\"kind\":\"none\"");
    cli_result_free(&r);
    assert_int_equal(dlock_lock_release(l), DLOCK_OK);
    assert_int_equal(dlock_lock_release(l), DLOCK_OK);
    r = DLOCK_CLI_RUN(f, 10000, "inspect", "orders");
    ASSERT_STATUS(r, 0);
    ASSERT_CONTAINS(r.out, "free");
    cli_result_free(&r);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* Every layout of REDIS_LAYOUT.md, written with plain commands, is named right, and the
 * JSON of each is valid (names with quotes and bytes that are not UTF-8 included). */
static void test_inspect_recognises_every_layout(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_cli_server();
    const char *id = "6e3814a1-e847-452b-a982-45baf93a1df2";
    redisReply *rep;
#define ADMIN(...)                                                                                 \
    do {                                                                                           \
        rep = redis_fixture_cmd(f, __VA_ARGS__);                                                   \
        assert_non_null(rep);                                                                      \
        assert_int_not_equal(rep->type, REDIS_REPLY_ERROR);                                        \
        freeReplyObject(rep);                                                                      \
    } while (0)
    ADMIN("HSET fair %s:7 1", id);
    ADMIN("PEXPIRE fair 30000");
    ADMIN("RPUSH redisson_lock_queue:{fair} %s:8 %s:9", id, id);
    ADMIN("ZADD redisson_lock_timeout:{fair} 99999999999999 %s:8 99999999999999 %s:9", id, id);
    ADMIN("HSET rw mode read %s:7 2 %s:8 1", id, id);
    ADMIN("SET {rw}:%s:7:rwlock_timeout:1 1 PX 20000", id);
    ADMIN("SET {rw}:%s:7:rwlock_timeout:2 1 PX 25000", id);
    ADMIN("HSET rww mode write %s:7:write 1", id);
    ADMIN("SET sem 3");
    ADMIN("SET pex 1");
    ADMIN("ZADD {pex}:timeout 922337203685477 0123456789abcdef");
    ADMIN("SET gate 2");
    ADMIN("SET text hello");
    ADMIN("RPUSH alist x");

    static const struct {
        const char *name, *as, *kind, *part;
    } cases[] = {
        {"fair", NULL, "fair_lock", "\"queue\":[{\"client_id\":\"6e3814a1"},
        {"rw", NULL, "rwlock", "\"mode\":\"read\""},
        {"rww", NULL, "rwlock", "\"mode\":\"write\""},
        {"sem", NULL, "count", "\"count\":3"},
        {"sem", "semaphore", "semaphore", "\"channel\":\"redisson_sc:{sem}\""},
        {"gate", "latch", "latch", "redisson_countdownlatch__channel__{gate}"},
        {"pex", NULL, "permits", "\"id\":\"30313233343536373839616263646566\""},
        {"text", NULL, "other", "\"redis_type\":\"string\""},
        {"alist", NULL, "other", "\"redis_type\":\"list\""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cli_result r = cases[i].as ? DLOCK_CLI_RUN(f, 10000, "inspect", "--json", "--as", cases[i].as,
                                               cases[i].name)
                               : DLOCK_CLI_RUN(f, 10000, "inspect", "--json", cases[i].name);
        ASSERT_STATUS(r, 0);
        assert_valid_json(r.out);
        char kind[64];
        snprintf(kind, sizeof(kind), "\"kind\":\"%s\"", cases[i].kind);
        ASSERT_CONTAINS(r.out, kind);
        ASSERT_CONTAINS(r.out, cases[i].part);
        cli_result_free(&r);
        r = cases[i].as ? DLOCK_CLI_RUN(f, 10000, "inspect", "--as", cases[i].as, cases[i].name)
                        : DLOCK_CLI_RUN(f, 10000, "inspect", cases[i].name);
        ASSERT_STATUS(r, 0);
        ASSERT_CONTAINS(r.out, cases[i].name);
        cli_result_free(&r);
    }
    /* A latch somebody awaits is told from a semaphore by its channel. */
    const char *await_argv[] = {cli_path(), "latch", "gate", "await", NULL};
    pid_t waiter = cli_spawn(await_argv, NULL, NULL);
    int64_t until = test_now_ms() + 10000;
    while (test_now_ms() < until) {
        cli_result r = DLOCK_CLI_RUN(f, 10000, "inspect", "--json", "gate");
        bool latch = strstr(r.out, "\"kind\":\"latch\"") != NULL;
        cli_result_free(&r);
        if (latch)
            break;
        test_sleep_ms(20);
    }
    cli_result r = DLOCK_CLI_RUN(f, 10000, "inspect", "gate");
    ASSERT_CONTAINS(r.out, "count-down latch");
    ASSERT_CONTAINS(r.out, "1 client(s) subscribed");
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(f, 10000, "latch", "gate", "count-down");
    ASSERT_STATUS(r, 0);
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(f, 10000, "latch", "gate", "count-down");
    ASSERT_STATUS(r, 0);
    cli_result_free(&r);
    assert_int_equal(cli_wait_exit(waiter, 10000), 0);

    /* Odd names: a quote, a backslash, a newline and a byte that is not UTF-8. */
    const char odd[] = "we\"ird\\na\nme\xff";
    rep = redis_fixture_cmd(f, "HSET %s %s:1 1", odd, id);
    freeReplyObject(rep);
    r = DLOCK_CLI_RUN(f, 10000, "inspect", "--json", odd);
    ASSERT_STATUS(r, 0);
    assert_valid_json(r.out);
    ASSERT_CONTAINS(r.out, "\"kind\":\"lock\"");
    assert_jq(f, r.out, ".holders | length == 1");
    cli_result_free(&r);
#undef ADMIN
    redis_fixture_stop(f);
}

static void test_release_force_frees_a_held_lock_and_refuses_what_is_not_a_lock(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_cli_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = NULL;
    assert_int_equal(dlock_lock_new(c, "stuck", &l), DLOCK_OK);
    assert_int_equal(dlock_lock_acquire(l, DLOCK_WATCHDOG), DLOCK_OK);

    cli_result r = DLOCK_CLI_RUN(f, 10000, "release", "--force", "stuck");
    ASSERT_STATUS(r, 0);
    ASSERT_CONTAINS(r.out, "released");
    cli_result_free(&r);
    assert_int_equal(redis_fixture_int(f, "EXISTS stuck"), 0);
    /* Another client gets it at once. */
    r = DLOCK_CLI_RUN(f, 10000, "run", "--wait", "0", "stuck", "--", "true");
    ASSERT_STATUS(r, 0);
    cli_result_free(&r);
    /* Nothing to release: still 0, and said. */
    r = DLOCK_CLI_RUN(f, 10000, "release", "--force", "stuck");
    ASSERT_STATUS(r, 0);
    ASSERT_CONTAINS(r.err, "not locked");
    cli_result_free(&r);

    /* Not a lock: refused, left alone. */
    redisReply *rep = redis_fixture_cmd(f, "HSET appdata field value");
    freeReplyObject(rep);
    rep = redis_fixture_cmd(f, "SET permits 4");
    freeReplyObject(rep);
    r = DLOCK_CLI_RUN(f, 10000, "release", "--force", "appdata");
    ASSERT_STATUS(r, 65);
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(f, 10000, "release", "--force", "permits");
    ASSERT_STATUS(r, 65);
    cli_result_free(&r);
    assert_int_equal(redis_fixture_int(f, "EXISTS appdata"), 1);
    assert_int_equal(redis_fixture_int(f, "GET permits"), 4);

    assert_int_equal(dlock_lock_release(l), DLOCK_ELOST); /* the holder learns it */
    dlock_lock_free(l);

    /* A read-write lock and a fair lock are released through their own kind. */
    dlock_rwlock *rw = NULL;
    assert_int_equal(dlock_rwlock_new(c, "rw", &rw), DLOCK_OK);
    assert_int_equal(dlock_lock_acquire(dlock_rwlock_write(rw), DLOCK_WATCHDOG), DLOCK_OK);
    r = DLOCK_CLI_RUN(f, 10000, "release", "--force", "rw");
    ASSERT_STATUS(r, 0);
    ASSERT_CONTAINS(r.out, "released");
    cli_result_free(&r);
    assert_int_equal(redis_fixture_int(f, "EXISTS rw"), 0);
    dlock_rwlock_free(rw);
    assert_int_equal(dlock_fairlock_new(c, "fair", &l), DLOCK_OK);
    assert_int_equal(dlock_lock_acquire(l, DLOCK_WATCHDOG), DLOCK_OK);
    redisReply *q = redis_fixture_cmd(f, "RPUSH redisson_lock_queue:{fair} someone:1");
    freeReplyObject(q); /* a queue makes it recognisably fair */
    r = DLOCK_CLI_RUN(f, 10000, "release", "--force", "fair");
    ASSERT_STATUS(r, 0);
    cli_result_free(&r);
    assert_int_equal(redis_fixture_int(f, "EXISTS fair"), 0);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

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
        cmocka_unit_test_teardown(test_help_of_every_command_exits_0_and_version_matches_the_header,
                                  kill_spawned),
        cmocka_unit_test_teardown(test_bad_usage_exits_64_with_a_message, kill_spawned),
        cmocka_unit_test_teardown(test_unreachable_redis_exits_69_and_a_refused_password_77,
                                  kill_spawned),
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
        cmocka_unit_test_teardown(
            test_inspect_shows_the_holder_client_id_owner_and_count_and_valid_json, kill_spawned),
        cmocka_unit_test_teardown(test_inspect_recognises_every_layout, kill_spawned),
        cmocka_unit_test_teardown(
            test_release_force_frees_a_held_lock_and_refuses_what_is_not_a_lock, kill_spawned),
        cmocka_unit_test_teardown(test_semaphore_set_add_available_and_run_with_permits_round_trip,
                                  kill_spawned),
        cmocka_unit_test_teardown(test_latch_set_count_down_count_and_await_round_trip,
                                  kill_spawned),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
