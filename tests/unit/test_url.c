/* SPDX-License-Identifier: MIT */
/* test_url.c — connection URL parsing: what is accepted, what each part becomes, and a
 * clear DLOCK_EINVAL for everything else. */
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
    int rc = dlock__url_parse(url, &ep, err, sizeof(err));
    if (rc != DLOCK_OK)
        fail_msg("%s: %s", url, err);
    return ep;
}

static void expect_bad(const char *url, const char *reason_part) {
    dlock__endpoint ep;
    char err[200];
    int rc = dlock__url_parse(url, &ep, err, sizeof(err));
    if (rc != DLOCK_EINVAL)
        fail_msg("%s was accepted", url ? url : "(null)");
    if (!strstr(err, reason_part))
        fail_msg("%s: reason \"%s\" does not mention \"%s\"", url ? url : "(null)", err,
                 reason_part);
    assert_null(ep.host);
    assert_null(ep.path);
}

static void test_tcp_host_only_gets_the_defaults(void **state) {
    (void)state;
    dlock__endpoint ep = parse_ok("redis://localhost");
    assert_false(ep.is_unix);
    assert_string_equal(ep.host, "localhost");
    assert_int_equal(ep.port, 6379);
    assert_int_equal(ep.db, 0);
    assert_null(ep.user);
    assert_null(ep.password);
    dlock__endpoint_free(&ep);
}

static void test_tcp_every_part(void **state) {
    (void)state;
    dlock__endpoint ep = parse_ok("redis://alice:s3cret@10.1.2.3:7000/5");
    assert_string_equal(ep.host, "10.1.2.3");
    assert_int_equal(ep.port, 7000);
    assert_int_equal(ep.db, 5);
    assert_string_equal(ep.user, "alice");
    assert_string_equal(ep.password, "s3cret");
    dlock__endpoint_free(&ep);
}

static void test_tcp_password_only(void **state) {
    (void)state;
    dlock__endpoint ep = parse_ok("redis://:pw@127.0.0.1:6380");
    assert_null(ep.user);
    assert_string_equal(ep.password, "pw");
    assert_int_equal(ep.port, 6380);
    dlock__endpoint_free(&ep);
}

static void test_percent_escapes_and_raw_at_in_password(void **state) {
    (void)state;
    dlock__endpoint ep = parse_ok("redis://bob:p%40ss%3Aword@h:1");
    assert_string_equal(ep.password, "p@ss:word");
    dlock__endpoint_free(&ep);
    ep = parse_ok("redis://bob:p@ss@h:2/1");
    assert_string_equal(ep.password, "p@ss");
    assert_string_equal(ep.host, "h");
    assert_int_equal(ep.db, 1);
    dlock__endpoint_free(&ep);
}

static void test_ipv6_host(void **state) {
    (void)state;
    dlock__endpoint ep = parse_ok("redis://[::1]:6390/2");
    assert_string_equal(ep.host, "::1");
    assert_int_equal(ep.port, 6390);
    assert_int_equal(ep.db, 2);
    dlock__endpoint_free(&ep);
    ep = parse_ok("redis://[fe80::1]");
    assert_int_equal(ep.port, 6379);
    dlock__endpoint_free(&ep);
}

static void test_trailing_slash_means_db_0(void **state) {
    (void)state;
    dlock__endpoint ep = parse_ok("redis://h:1/");
    assert_int_equal(ep.db, 0);
    dlock__endpoint_free(&ep);
}

static void test_unix_socket_with_query(void **state) {
    (void)state;
    dlock__endpoint ep = parse_ok("unix:///run/redis/redis.sock?db=3&user=u&password=p%26w");
    assert_true(ep.is_unix);
    assert_string_equal(ep.path, "/run/redis/redis.sock");
    assert_int_equal(ep.db, 3);
    assert_string_equal(ep.user, "u");
    assert_string_equal(ep.password, "p&w");
    dlock__endpoint_free(&ep);
    ep = parse_ok("unix:///tmp/r.sock");
    assert_string_equal(ep.path, "/tmp/r.sock");
    assert_int_equal(ep.db, 0);
    assert_null(ep.password);
    dlock__endpoint_free(&ep);
}

static void test_bad_urls_are_einval_with_a_reason(void **state) {
    (void)state;
    expect_bad(NULL, "empty");
    expect_bad("", "empty");
    expect_bad("http://h", "scheme");
    expect_bad("localhost:6379", "scheme");
    expect_bad("rediss://h?color=red", "unknown query parameter"); /* not a TLS parameter */
    expect_bad("redis://", "host");
    expect_bad("redis://:6379", "host");
    expect_bad("redis://h:0", "port");
    expect_bad("redis://h:65536", "port");
    expect_bad("redis://h:12ab", "port");
    expect_bad("redis://h:", "port");
    expect_bad("redis://h/x", "database");
    expect_bad("redis://h/-1", "database");
    expect_bad("redis://h/99999999999", "database");
    expect_bad("redis://nopass@h", "userinfo");
    expect_bad("redis://u:p%4@h", "escape");
    expect_bad("redis://u:p%zz@h", "escape");
    expect_bad("redis://u:p%00@h", "escape");
    expect_bad("redis://[::1", "IPv6");
    expect_bad("redis://[::1]x", "junk");
    expect_bad("redis://h?db=1", "query");
    expect_bad("unix://relative.sock", "absolute");
    expect_bad("unix:///", "empty");
    expect_bad("unix:///tmp/s?db=x", "db");
    expect_bad("unix:///tmp/s?color=red", "unknown");
    expect_bad("unix:///tmp/s?db", "=");
    char longpath[300] = "unix:///";
    memset(longpath + 8, 'a', 200);
    longpath[208] = '\0';
    expect_bad(longpath, "longer");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tcp_host_only_gets_the_defaults),
        cmocka_unit_test(test_tcp_every_part),
        cmocka_unit_test(test_tcp_password_only),
        cmocka_unit_test(test_percent_escapes_and_raw_at_in_password),
        cmocka_unit_test(test_ipv6_host),
        cmocka_unit_test(test_trailing_slash_means_db_0),
        cmocka_unit_test(test_unix_socket_with_query),
        cmocka_unit_test(test_bad_urls_are_einval_with_a_reason),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
