/* SPDX-License-Identifier: MIT */
/* tls_fixture_selftest.c - proves tls_fixture.h before TLS tests rely on it.
 *
 * hiredis 0.14 speaks no TLS, so the checks go through `redis-cli --tls` (topo_run): the
 * server answers a client that trusts the CA, by IP and by name; a client that trusts the
 * wrong CA is refused; --tls-auth-clients yes and optional treat client certificates as
 * Redis documents; admin commands run over the plain unix socket; and stop leaves no process
 * and no certificate behind.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>

#include <cmocka.h>

#include "test_util.h"
#include "tls_fixture.h"
#include "topology_util.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TEST_BUDGET_S 30

static tls_fixture *start_or_fail(const tls_fixture_opts *o) {
    tls_fixture *f = NULL;
    assert_int_equal(tls_fixture_start(o, &f), 0);
    assert_non_null(f);
    return f;
}

/* redis-cli --tls against the fixture's port; `cert`/`key` NULL: no client certificate.
 * Returns what redis-cli printed (the caller frees) and its exit status in *status. */
static char *tls_cli(tls_fixture *f, const char *host, const char *cacert, const char *cert,
                     const char *key, const char *command, int *status) {
    char port[16];
    snprintf(port, sizeof port, "%d", tls_fixture_port(f));
    char *argv[16] = {"redis-cli", "--tls",      "--cacert", (char *)cacert,
                      "-h",        (char *)host, "-p",       port};
    size_t i = 8;
    if (cert != NULL) {
        argv[i++] = "--cert";
        argv[i++] = (char *)cert;
        argv[i++] = "--key";
        argv[i++] = (char *)key;
    }
    argv[i++] = (char *)command;
    argv[i] = NULL;
    char *out = NULL;
    *status = topo_run(argv, NULL, &out);
    assert_non_null(out);
    return out;
}

static void assert_cli_answers(tls_fixture *f, const char *host, const char *cacert,
                               const char *cert, const char *key, const char *command,
                               const char *expected) {
    int status = -1;
    char *out = tls_cli(f, host, cacert, cert, key, command, &status);
    if (strstr(out, expected) == NULL || status != 0)
        fail_msg("redis-cli %s (host %s, cert %s): status %d, \"%s\", expected \"%s\"", command,
                 host, cert ? cert : "none", status, out, expected);
    free(out);
}

/* redis-cli gets no answer: the handshake fails, or (TLS 1.3, client certificate refused)
 * the server closes the connection right after it. */
static void assert_cli_refused(tls_fixture *f, const char *cacert, const char *cert,
                               const char *key, const char *why_expected) {
    int status = -1;
    char *out = tls_cli(f, "127.0.0.1", cacert, cert, key, "PING", &status);
    if (strstr(out, "PONG") != NULL || status == 0)
        fail_msg("expected a refusal (%s), redis-cli said \"%s\" (status %d)",
                 why_expected ? why_expected : "any reason", out, status);
    if (why_expected != NULL && strstr(out, why_expected) == NULL)
        fail_msg("expected \"%s\" in \"%s\"", why_expected, out);
    free(out);
}

static void assert_gone(pid_t pid, const char *dir) {
    errno = 0;
    assert_int_equal(kill(pid, 0), -1);
    assert_int_equal(errno, ESRCH);
    struct stat st;
    errno = 0;
    assert_int_equal(stat(dir, &st), -1);
    assert_int_equal(errno, ENOENT);
}

static void test_server_answers_over_tls_to_a_client_trusting_the_ca(void **state) {
    (void)state;
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    int64_t t0 = test_now_ms();
    tls_fixture *f = start_or_fail(NULL);
    print_message("TLS fixture up in %lld ms\n", (long long)(test_now_ms() - t0));
    tls_certs *certs = tls_fixture_certs(f);
    int port = tls_fixture_port(f);
    assert_true(port > 0 && port != 6379);

    char expected[512];
    snprintf(expected, sizeof expected, "rediss://127.0.0.1:%d?cacert=%s", port,
             tls_certs_ca(certs));
    assert_string_equal(tls_fixture_url(f), expected);
    snprintf(expected, sizeof expected, "rediss://127.0.0.1:%d?cacert=%s&cert=%s&key=%s", port,
             tls_certs_ca(certs), tls_certs_client_cert(certs), tls_certs_client_key(certs));
    assert_string_equal(tls_fixture_mtls_url(f), expected);

    /* admin over the plain unix socket, read back over TLS, by IP and by name */
    redis_fixture *server = tls_fixture_server(f);
    assert_int_equal(redis_fixture_int(server, "INCRBY via_admin 7"), 7);
    assert_cli_answers(f, "127.0.0.1", tls_certs_ca(certs), NULL, NULL, "PING", "PONG");
    assert_cli_answers(f, "localhost", tls_certs_ca(certs), NULL, NULL, "PING", "PONG");
    char port_buf[16];
    snprintf(port_buf, sizeof port_buf, "%d", port);
    char *argv[] = {"redis-cli", "--tls",  "--cacert", (char *)tls_certs_ca(certs),
                    "-p",        port_buf, "GET",      "via_admin",
                    NULL};
    char *out = NULL;
    assert_int_equal(topo_run(argv, NULL, &out), 0);
    assert_string_equal(out, "7\n");
    free(out);

    /* the TLS port speaks no plaintext */
    assert_true(topo_plaintext_unanswered(port));

    pid_t pid = redis_fixture_pid(server);
    char *dir = strdup(tls_certs_dir(certs));
    tls_fixture_stop(f);
    assert_gone(pid, dir);
    free(dir);
    test_watchdog_disarm();
}

static void test_client_trusting_another_ca_is_refused(void **state) {
    (void)state;
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    tls_fixture *f = start_or_fail(NULL);
    assert_cli_refused(f, tls_certs_wrong_ca(tls_fixture_certs(f)), NULL, NULL,
                       "certificate verify failed");
    tls_fixture_stop(f);
    test_watchdog_disarm();
}

static void test_required_client_certificate_must_be_signed_by_the_ca(void **state) {
    (void)state;
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    tls_fixture_opts o = {.client_certs = TLS_FIXTURE_CLIENT_CERT_REQUIRED};
    tls_fixture *f = start_or_fail(&o);
    tls_certs *certs = tls_fixture_certs(f);
    const char *ca = tls_certs_ca(certs);
    assert_cli_answers(f, "127.0.0.1", ca, tls_certs_client_cert(certs),
                       tls_certs_client_key(certs), "PING", "PONG");
    assert_cli_refused(f, ca, NULL, NULL, NULL);
    assert_cli_refused(f, ca, tls_certs_wrong_client_cert(certs), tls_certs_wrong_client_key(certs),
                       NULL);
    tls_fixture_stop(f);
    test_watchdog_disarm();
}

static void test_optional_client_certificate_is_checked_only_when_given(void **state) {
    (void)state;
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    tls_fixture_opts o = {.client_certs = TLS_FIXTURE_CLIENT_CERT_OPTIONAL};
    tls_fixture *f = start_or_fail(&o);
    tls_certs *certs = tls_fixture_certs(f);
    const char *ca = tls_certs_ca(certs);
    assert_cli_answers(f, "127.0.0.1", ca, NULL, NULL, "PING", "PONG");
    assert_cli_answers(f, "127.0.0.1", ca, tls_certs_client_cert(certs),
                       tls_certs_client_key(certs), "PING", "PONG");
    assert_cli_refused(f, ca, tls_certs_wrong_client_cert(certs), tls_certs_wrong_client_key(certs),
                       NULL);
    tls_fixture_stop(f);
    test_watchdog_disarm();
}

static void test_requirepass_reaches_server_and_url(void **state) {
    (void)state;
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    tls_fixture_opts o = {.requirepass = "p@ss"};
    tls_fixture *f = start_or_fail(&o);
    char expected[512];
    snprintf(expected, sizeof expected, "rediss://:p%%40ss@127.0.0.1:%d?cacert=%s",
             tls_fixture_port(f), tls_certs_ca(tls_fixture_certs(f)));
    assert_string_equal(tls_fixture_url(f), expected);
    assert_cli_answers(f, "127.0.0.1", tls_certs_ca(tls_fixture_certs(f)), NULL, NULL, "PING",
                       "NOAUTH");
    assert_int_equal(redis_fixture_int(tls_fixture_server(f), "INCR admin_authed"), 1);
    tls_fixture_stop(f);
    test_watchdog_disarm();
}

static void test_restart_keeps_the_tls_port(void **state) {
    (void)state;
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    tls_fixture *f = start_or_fail(NULL);
    pid_t old = redis_fixture_pid(tls_fixture_server(f));
    assert_int_equal(redis_fixture_restart(tls_fixture_server(f)), 0);
    assert_true(redis_fixture_pid(tls_fixture_server(f)) != old);
    assert_cli_answers(f, "127.0.0.1", tls_certs_ca(tls_fixture_certs(f)), NULL, NULL, "PING",
                       "PONG");
    tls_fixture_stop(f);
    test_watchdog_disarm();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_server_answers_over_tls_to_a_client_trusting_the_ca),
        cmocka_unit_test(test_client_trusting_another_ca_is_refused),
        cmocka_unit_test(test_required_client_certificate_must_be_signed_by_the_ca),
        cmocka_unit_test(test_optional_client_certificate_is_checked_only_when_given),
        cmocka_unit_test(test_requirepass_reaches_server_and_url),
        cmocka_unit_test(test_restart_keeps_the_tls_port),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
