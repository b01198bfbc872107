/* SPDX-License-Identifier: MIT */
/* test_tls_edges.c — rediss:// where the other side or the URL is not what TLS needs, and
 * the words that say so:
 *   - a plain-text Redis port (it reads the TLS hello as an inline command, waits for a
 *     newline and says nothing): the attempt fails at once — not after connect_timeout_ms
 *     — saying the server answered in plain text and what to use instead; never that a
 *     client certificate may be required;
 *   - a server that closes the connection without a byte of TLS: it did not answer the
 *     handshake (is it a TLS port?), not "may require a client certificate", which only a
 *     TLS server that answered can mean;
 *   - a cacert=, cert= or key= file that is not there: "No such file or directory" with its
 *     path (OpenSSL says only "system lib"). */
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "core_call.h"
#include "dlock.h"
#include "harness.h"
#include "test_util.h"
#include "tls_fixture.h"

/* The client's dlock_client_new with a connect timeout long enough that waiting it out
 * cannot pass for failing fast. */
#define LONG_CONNECT_TIMEOUT_MS 30000

static int new_client(const char *url, dlock_client **out) {
    dlock_options o;
    dlock_options_init(&o);
    o.url = url;
    o.connect_timeout_ms = LONG_CONNECT_TIMEOUT_MS;
    o.retry_delay_ms = TEST_RETRY_DELAY_MS;
    return dlock_client_new(&o, out);
}

static void expect_text(const char *part) {
    if (!strstr(dlock_last_error(), part))
        fail_msg("\"%s\" does not say \"%s\"", dlock_last_error(), part);
}

static void expect_no_text(const char *part) {
    if (strstr(dlock_last_error(), part))
        fail_msg("\"%s\" says \"%s\"", dlock_last_error(), part);
}

/* ---- a plain-text port ---------------------------------------------------------------------- */

static void test_a_plain_text_port_fails_at_once_saying_it_answered_in_plain_text(void **state) {
    (void)state;
    test_watchdog_arm(90, __func__);
    redis_fixture_opts o = {.tcp = true};
    redis_fixture *plain = NULL;
    assert_int_equal(redis_fixture_start(&o, &plain), 0);
    char url[128], where[64];
    snprintf(where, sizeof(where), "127.0.0.1:%d", redis_fixture_port(plain));
    snprintf(url, sizeof(url), "rediss://%s", where);
    dlock_client *c = NULL;
    int64_t start = test_now_ms();
    ASSERT_RC(new_client(url, &c), DLOCK_ECONN);
    int64_t took = test_now_ms() - start;
    printf("# rediss:// to a plain-text port (connect_timeout_ms %d): %lld ms\n# %s\n",
           LONG_CONNECT_TIMEOUT_MS, (long long)took, dlock_last_error());
    assert_null(c);
    /* before: the whole connect timeout, 30 s */
    ASSERT_BETWEEN(took, 0, LONG_CONNECT_TIMEOUT_MS / 2);
    expect_text("answered in plain text");
    expect_text(where);
    expect_text("use redis://");
    expect_text("tls-port");
    expect_no_text("client certificate");
    redis_fixture_stop(plain);
}

/* ---- a server that hangs up without a word -------------------------------------------------- */

typedef struct hang_up_server {
    int fd, port;
    pthread_t thread;
} hang_up_server;

/* Accepts and closes every connection until its socket is shut down. */
static void *hang_up_main(void *arg) {
    hang_up_server *h = arg;
    for (;;) {
        int conn = accept(h->fd, NULL, NULL);
        if (conn < 0)
            return NULL;
        close(conn);
    }
}

static void hang_up_start(hang_up_server *h) {
    h->fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    assert_int_equal(bind(h->fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(h->fd, 16), 0);
    assert_int_equal(getsockname(h->fd, (struct sockaddr *)&a, &len), 0);
    h->port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&h->thread, NULL, hang_up_main, h), 0);
}

static void hang_up_stop(hang_up_server *h) {
    shutdown(h->fd, SHUT_RDWR); /* accept returns */
    pthread_join(h->thread, NULL);
    close(h->fd);
}

static void test_a_server_that_hangs_up_at_once_is_no_client_certificate_matter(void **state) {
    (void)state;
    test_watchdog_arm(60, __func__);
    hang_up_server h;
    hang_up_start(&h);
    char url[128];
    snprintf(url, sizeof(url), "rediss://127.0.0.1:%d", h.port);
    dlock_client *c = NULL;
    ASSERT_RC(new_client(url, &c), DLOCK_ECONN);
    printf("# %s\n", dlock_last_error());
    expect_text("did not answer the TLS handshake");
    expect_text("TLS port");
    expect_no_text("client certificate"); /* before: "may require a client certificate" */
    hang_up_stop(&h);
}

/* ---- files that are not there --------------------------------------------------------------- */

static void expect_missing_file(const char *url, const char *path) {
    dlock_client *c = NULL;
    ASSERT_RC(new_client(url, &c), DLOCK_EINVAL);
    assert_null(c);
    printf("# %s\n", dlock_last_error());
    expect_text(path);
    expect_text("No such file or directory");
    expect_no_text("system lib");
}

static void test_a_missing_cacert_cert_or_key_says_no_such_file_with_its_path(void **state) {
    (void)state;
    test_watchdog_arm(60, __func__);
    tls_certs *certs = NULL;
    assert_int_equal(tls_certs_make(&certs), 0);
    char url[3 * PATH_MAX];
    expect_missing_file("rediss://127.0.0.1:1?cacert=/nonexistent/ca.crt", "/nonexistent/ca.crt");
    snprintf(url, sizeof(url), "rediss://127.0.0.1:1?cacert=%s&cert=%s&key=/nonexistent/client.key",
             tls_certs_ca(certs), tls_certs_client_cert(certs));
    expect_missing_file(url, "/nonexistent/client.key");
    snprintf(url, sizeof(url), "rediss://127.0.0.1:1?cacert=%s&cert=/nonexistent/client.crt&key=%s",
             tls_certs_ca(certs), tls_certs_client_key(certs));
    expect_missing_file(url, "/nonexistent/client.crt");
    tls_certs_free(certs);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_plain_text_port_fails_at_once_saying_it_answered_in_plain_text),
        cmocka_unit_test(test_a_server_that_hangs_up_at_once_is_no_client_certificate_matter),
        cmocka_unit_test(test_a_missing_cacert_cert_or_key_says_no_such_file_with_its_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
