/* SPDX-License-Identifier: MIT */
/* test_credentials.c — credentials in errors and output.
 *
 * What is proven: AUTH with a password against a server that has none configured is
 * DLOCK_EAUTH (a credentials problem, not a server error); a connection that fails names
 * the host:port or socket path it tried and never the password; the tool (tools/, run
 * through tests/support/cli_run.h: $DLOCK_CLI or <build>/tools/dlock) prints no password whether
 * the URL comes from $DLOCK_URL or --url, as userinfo or as ?password=; and `dlock run` by a user
 * whose ACL has no channels exits 77 instead of waiting. */
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli_run.h"
#include "dlock.h"
#include "harness.h"
#include "redis_fixture.h"
#include "test_util.h"

#define SECRET "s3cret-Pw"

static int new_client(const char *url, dlock_client **out) {
    dlock_options o;
    dlock_options_init(&o);
    o.url = url;
    o.connect_timeout_ms = 2000;
    o.retry_delay_ms = TEST_RETRY_DELAY_MS;
    return dlock_client_new(&o, out);
}

static void assert_no_secret(const char *text) {
    if (strstr(text, SECRET))
        fail_msg("the password is shown: \"%s\"", text);
}

static void test_auth_against_a_server_without_password_is_eauth(void **state) {
    (void)state;
    test_watchdog_arm(30, __func__);
    redis_fixture *f = start_server();
    char url[PATH_MAX + 64];
    snprintf(url, sizeof(url), "unix://%s?password=" SECRET, redis_fixture_socket(f));
    dlock_client *c = NULL;
    ASSERT_RC(new_client(url, &c), DLOCK_EAUTH);
    assert_null(c);
    assert_no_secret(dlock_last_error());
    redis_fixture_stop(f);
}

static void test_connect_error_names_host_and_port_never_the_password(void **state) {
    (void)state;
    test_watchdog_arm(30, __func__);
    dlock_client *c = NULL;
    /* port 1: nothing listens there on a test machine */
    ASSERT_RC(new_client("redis://u:" SECRET "@127.0.0.1:1", &c), DLOCK_ECONN);
    const char *text = dlock_last_error();
    if (!strstr(text, "127.0.0.1:1"))
        fail_msg("\"%s\" does not name 127.0.0.1:1", text);
    assert_no_secret(text);
}

static void test_connect_error_names_the_socket_path_never_the_password(void **state) {
    (void)state;
    test_watchdog_arm(30, __func__);
    dlock_client *c = NULL;
    ASSERT_RC(new_client("unix:///nonexistent/dlock.sock?user=u&password=" SECRET, &c),
              DLOCK_ECONN);
    const char *text = dlock_last_error();
    if (!strstr(text, "/nonexistent/dlock.sock"))
        fail_msg("\"%s\" does not name the socket", text);
    assert_no_secret(text);
}

/* ---- the tool ------------------------------------------------------------------------- */

/* The tool with $DLOCK_URL set to env_url (NULL: unset), to its end; what it printed on
 * stdout and stderr, together, in text. */
static int run_cli(const char *env_url, const char *const *args, int64_t timeout_ms, char *text,
                   size_t size) {
    if (env_url)
        setenv("DLOCK_URL", env_url, 1);
    else
        unsetenv("DLOCK_URL");
    cli_result r = cli_run_argv(NULL, timeout_ms, args);
    snprintf(text, size, "%s%s", r.out, r.err);
    int status = r.status;
    cli_result_free(&r);
    return status;
}

static void test_cli_prints_no_password_from_dlock_url_or_url_option(void **state) {
    (void)state;
    test_watchdog_arm(60, __func__);
    REQUIRE_CLI();
    static const char *const cases[][2] = {
        /* DLOCK_URL, --url */
        {"redis://u:" SECRET "@127.0.0.1:1", NULL},
        {NULL, "redis://u:" SECRET "@127.0.0.1:1"},
        {NULL, "unix:///nonexistent/dlock.sock?user=u&password=" SECRET},
        {"unix:///nonexistent/dlock.sock?password=" SECRET, NULL},
        {NULL, "redis://u:" SECRET "@127.0.0.1:notaport"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        for (int inspect = 0; inspect < 2; inspect++) {
            const char *args[8];
            int n = 0;
            if (cases[i][1]) {
                args[n++] = "--url";
                args[n++] = cases[i][1];
            }
            if (inspect) {
                args[n++] = "inspect";
                args[n++] = "x";
            } else {
                args[n++] = "run";
                args[n++] = "x";
                args[n++] = "--";
                args[n++] = "true";
            }
            args[n] = NULL;
            char output[8192];
            int status = run_cli(cases[i][0], args, 20000, output, sizeof(output));
            if (status != 69 && status != 64)
                fail_msg("case %zu %s: exit %d, output \"%s\"", i, inspect ? "inspect" : "run",
                         status, output);
            assert_true(output[0] != '\0');
            assert_no_secret(output);
        }
    }
}

static void test_cli_run_without_channel_permission_exits_77(void **state) {
    (void)state;
    test_watchdog_arm(60, __func__);
    REQUIRE_CLI();
    redis_fixture *f = start_server();
    redisReply *rep =
        redis_fixture_cmd(f, "ACL SETUSER nochan on >" SECRET " ~* resetchannels +@all");
    assert_non_null(rep);
    freeReplyObject(rep);
    dlock_client *holder = connect_client(f);
    dlock_lock *held;
    ASSERT_RC(dlock_lock_new(holder, "acl-run", &held), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(held, 30000), DLOCK_OK);

    char url[PATH_MAX + 64];
    snprintf(url, sizeof(url), "unix://%s?user=nochan&password=" SECRET, redis_fixture_socket(f));
    long long before = redis_fixture_info_int(f, "stats", "total_connections_received");
    static const char *const args[] = {"-v",    "run", "acl-run", "--wait",
                                       "20000", "--",  "true",    NULL};
    int64_t t0 = test_now_ms();
    char output[8192];
    int status = run_cli(url, args, 20000, output, sizeof(output));
    int64_t took = test_now_ms() - t0;
    long long made = redis_fixture_info_int(f, "stats", "total_connections_received") - before;
    if (status != 77)
        fail_msg("exit %d after %lld ms and %lld connections, output \"%s\"", status,
                 (long long)took, made, output);
    ASSERT_BETWEEN(took, 0, slack_ms(5000));
    ASSERT_BETWEEN(made, 1, 20);
    if (!strstr(output, "redisson_lock__channel:{acl-run}") || !strstr(output, "nochan"))
        fail_msg("output names neither channel nor user: \"%s\"", output);
    assert_no_secret(output);

    dlock_lock_free(held);
    dlock_client_free(holder);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_auth_against_a_server_without_password_is_eauth),
        cmocka_unit_test(test_connect_error_names_host_and_port_never_the_password),
        cmocka_unit_test(test_connect_error_names_the_socket_path_never_the_password),
        cmocka_unit_test(test_cli_prints_no_password_from_dlock_url_or_url_option),
        cmocka_unit_test(test_cli_run_without_channel_permission_exits_77),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
