/* SPDX-License-Identifier: MIT */
/* test_url_tls.c — rediss:// URLs: the TLS keys (cacert, cert, key, sni, insecure) and what
 * each becomes, the defaults, and a clear DLOCK_EINVAL for a TLS key on a plain URL, an
 * unknown key, an empty value, cert without key; a password in such a URL is never shown. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "client/client.h"

static dlock__endpoint parse_ok(const char *url) {
    dlock__endpoint ep;
    char err[200];
    if (dlock__url_parse(url, &ep, err, sizeof(err)) != DLOCK_OK)
        fail_msg("%s: %s", url, err);
    return ep;
}

static void expect_bad(const char *url, const char *reason_part) {
    dlock__endpoint ep;
    char err[200];
    if (dlock__url_parse(url, &ep, err, sizeof(err)) != DLOCK_EINVAL)
        fail_msg("%s was accepted", url);
    if (!strstr(err, reason_part))
        fail_msg("%s: reason \"%s\" does not mention \"%s\"", url, err, reason_part);
    assert_null(ep.host);
    assert_null(ep.tls_cacert);
}

static void test_rediss_host_only_verifies_with_the_system_store(void **state) {
    (void)state;
    dlock__endpoint ep = parse_ok("rediss://redis.example.com");
    assert_true(ep.tls);
    assert_false(ep.tls_insecure);
    assert_string_equal(ep.host, "redis.example.com");
    assert_int_equal(ep.port, 6379);
    assert_null(ep.tls_cacert);
    assert_null(ep.tls_cert);
    assert_null(ep.tls_key);
    assert_null(ep.tls_sni);
    dlock__endpoint_free(&ep);
}

static void test_rediss_takes_every_tls_key_after_the_db(void **state) {
    (void)state;
    dlock__endpoint ep = parse_ok("rediss://u:p%40ss@[::1]:6390/2?cacert=/etc/ca%20x.crt"
                                  "&cert=/c.crt&key=/c.key&sni=redis.internal&insecure=1");
    assert_true(ep.tls);
    assert_string_equal(ep.host, "::1");
    assert_int_equal(ep.port, 6390);
    assert_int_equal(ep.db, 2);
    assert_string_equal(ep.user, "u");
    assert_string_equal(ep.password, "p@ss");
    assert_string_equal(ep.tls_cacert, "/etc/ca x.crt");
    assert_string_equal(ep.tls_cert, "/c.crt");
    assert_string_equal(ep.tls_key, "/c.key");
    assert_string_equal(ep.tls_sni, "redis.internal");
    assert_true(ep.tls_insecure);
    dlock__endpoint_free(&ep);
}

static void test_the_query_may_follow_the_host_or_the_port(void **state) {
    (void)state;
    dlock__endpoint ep = parse_ok("rediss://h?cacert=/ca.crt");
    assert_string_equal(ep.host, "h");
    assert_string_equal(ep.tls_cacert, "/ca.crt");
    dlock__endpoint_free(&ep);
    ep = parse_ok("rediss://h:7000?insecure=0");
    assert_int_equal(ep.port, 7000);
    assert_false(ep.tls_insecure);
    dlock__endpoint_free(&ep);
}

static void test_bad_tls_urls_are_einval_with_a_reason(void **state) {
    (void)state;
    expect_bad("redis://h?cacert=/ca.crt", "rediss");
    expect_bad("redis://h/0?insecure=1", "rediss");
    expect_bad("rediss://h?color=red", "unknown");
    expect_bad("rediss://h?db=1", "unknown");
    expect_bad("rediss://h?cacert=", "empty");
    expect_bad("rediss://h?cacert", "=");
    expect_bad("rediss://h?insecure=yes", "insecure");
    expect_bad("rediss://h?cert=/c.crt", "together");
    expect_bad("rediss://h?key=/c.key", "together");
    expect_bad("rediss://h?sni=%zz", "escape");
    expect_bad("rediss://", "host");
    expect_bad("rediss://h:0", "port");
    expect_bad("unix:///tmp/s?cacert=/ca.crt", "unknown");
}

static void test_a_tls_url_is_shown_without_its_password(void **state) {
    (void)state;
    char buf[256];
    assert_string_equal(
        dlock__url_masked("rediss://u:s3cret@h:6390/1?cacert=/ca.crt", buf, sizeof(buf)),
        "rediss://u:***@h:6390/1?cacert=/ca.crt");
    dlock__endpoint ep = parse_ok("rediss://u:s3cret@h:6390?cacert=/ca.crt");
    dlock__endpoint_describe(&ep, buf, sizeof(buf));
    assert_string_equal(buf, "h:6390 (TLS)");
    dlock__endpoint_free(&ep);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rediss_host_only_verifies_with_the_system_store),
        cmocka_unit_test(test_rediss_takes_every_tls_key_after_the_db),
        cmocka_unit_test(test_the_query_may_follow_the_host_or_the_port),
        cmocka_unit_test(test_bad_tls_urls_are_einval_with_a_reason),
        cmocka_unit_test(test_a_tls_url_is_shown_without_its_password),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
