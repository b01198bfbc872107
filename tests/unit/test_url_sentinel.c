/* SPDX-License-Identifier: MIT */
/* test_url_sentinel.c — redis-sentinel:// and rediss-sentinel:// URLs: the sentinels in
 * order with their own credentials, the master's name, the data nodes' credentials and db,
 * a clear DLOCK_EINVAL for everything else, and no password when such a URL is shown. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "topology/sentinel.h"

static dlock__sentinel_url parse_ok(const char *url) {
    dlock__sentinel_url u;
    char err[200];
    if (dlock__sentinel_url_parse(url, &u, err, sizeof(err)) != DLOCK_OK)
        fail_msg("%s: %s", url, err);
    return u;
}

static void expect_bad(const char *url, const char *reason_part) {
    dlock__sentinel_url u;
    char err[200];
    int rc = dlock__sentinel_url_parse(url, &u, err, sizeof(err));
    if (rc != DLOCK_EINVAL)
        fail_msg("%s was accepted", url);
    if (!strstr(err, reason_part))
        fail_msg("%s: reason \"%s\" does not mention \"%s\"", url, err, reason_part);
    if (strstr(err, "s3cret"))
        fail_msg("%s: reason \"%s\" shows the password", url, err);
    assert_null(u.sentinels);
    assert_null(u.master_name);
    assert_int_equal(u.count, 0);
}

static void expect_sentinel(const dlock__sentinel_url *u, size_t i, const char *host, int port) {
    assert_true(i < u->count);
    assert_string_equal(u->sentinels[i].host, host);
    assert_int_equal(u->sentinels[i].port, port);
}

static void test_scheme_tells_a_sentinel_url(void **state) {
    (void)state;
    assert_true(dlock__url_is_sentinel("redis-sentinel://h/m"));
    assert_true(dlock__url_is_sentinel("rediss-sentinel://h/m"));
    assert_false(dlock__url_is_sentinel("redis://h"));
    assert_false(dlock__url_is_sentinel("rediss://h"));
    assert_false(dlock__url_is_sentinel(NULL));
}

static void test_sentinels_in_order_with_the_default_port(void **state) {
    (void)state;
    dlock__sentinel_url u = parse_ok("redis-sentinel://10.0.0.1,10.0.0.2:26380,[::1]/mymaster");
    assert_string_equal(u.master_name, "mymaster");
    assert_int_equal(u.count, 3);
    expect_sentinel(&u, 0, "10.0.0.1", 26379);
    expect_sentinel(&u, 1, "10.0.0.2", 26380);
    expect_sentinel(&u, 2, "::1", 26379);
    for (size_t i = 0; i < u.count; i++) {
        assert_null(u.sentinels[i].user);
        assert_null(u.sentinels[i].password);
    }
    assert_null(u.data.host);
    assert_int_equal(u.data.port, 0);
    assert_int_equal(u.data.db, 0);
    assert_null(u.data.password);
    dlock__sentinel_url_free(&u);
}

static void test_data_credentials_and_db_are_the_data_nodes_only(void **state) {
    (void)state;
    dlock__sentinel_url u = parse_ok("redis-sentinel://alice:s3cret@h1:1,h2:2/m-1.x/5");
    assert_string_equal(u.master_name, "m-1.x");
    assert_string_equal(u.data.user, "alice");
    assert_string_equal(u.data.password, "s3cret");
    assert_int_equal(u.data.db, 5);
    assert_false(u.data.is_unix);
    assert_int_equal(u.count, 2);
    assert_null(u.sentinels[1].user);
    assert_null(u.sentinels[1].password);
    assert_int_equal(u.sentinels[1].db, 0);
    dlock__sentinel_url_free(&u);
}

static void test_sentinel_credentials_from_the_query(void **state) {
    (void)state;
    dlock__sentinel_url u =
        parse_ok("redis-sentinel://:pw@h1,h2/m?sentinel_user=sen&sentinel_password=a%40b:c/d@e");
    for (size_t i = 0; i < u.count; i++) {
        assert_string_equal(u.sentinels[i].user, "sen");
        assert_string_equal(u.sentinels[i].password, "a@b:c/d@e");
    }
    assert_null(u.data.user);
    assert_string_equal(u.data.password, "pw");
    dlock__sentinel_url_free(&u);

    u = parse_ok("redis-sentinel://h1/m?sentinel_password=only");
    assert_null(u.sentinels[0].user);
    assert_string_equal(u.sentinels[0].password, "only");
    assert_null(u.data.password);
    dlock__sentinel_url_free(&u);
}

static void test_bad_sentinel_urls_are_einval_with_a_reason(void **state) {
    (void)state;
    expect_bad("redis-sentinel://h1,h2", "master name is missing");
    expect_bad("redis-sentinel://h1/", "master name");
    expect_bad("redis-sentinel://h1/my master", "master name");
    expect_bad("redis-sentinel:///m", "no sentinel host");
    expect_bad("redis-sentinel://h1,,h2/m", "empty sentinel host");
    expect_bad("redis-sentinel://h1,/m", "empty sentinel host");
    expect_bad("redis-sentinel://h1,h2:99999/m", "sentinel host 2: port");
    expect_bad("redis-sentinel://h1/m/x", "database");
    expect_bad("redis-sentinel://h1/m?sentinel_user=u", "sentinel_user needs sentinel_password");
    expect_bad("redis-sentinel://h1/m?sentinel_password", "without '='");
    expect_bad("redis-sentinel://u:s3cret@h1/m?sentinel_password=%zz", "escape");
    expect_bad("redis://h1/m", "scheme");
}

static void test_sentinel_url_is_shown_without_passwords(void **state) {
    (void)state;
    char buf[256];
    const char *shown = dlock__url_masked(
        "redis-sentinel://u:s3cret@h1:1,h2:2/m/1?sentinel_user=s&sentinel_password=s3cret", buf,
        sizeof(buf));
    assert_null(strstr(shown, "s3cret"));
    assert_string_equal(
        shown, "redis-sentinel://u:***@h1:1,h2:2/m/1?sentinel_user=s&sentinel_password=***");
    shown = dlock__url_masked("rediss-sentinel://h1/m?sentinel_password=s3cret&cacert=/ca.pem", buf,
                              sizeof(buf));
    assert_string_equal(shown, "rediss-sentinel://h1/m?sentinel_password=***&cacert=/ca.pem");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scheme_tells_a_sentinel_url),
        cmocka_unit_test(test_sentinels_in_order_with_the_default_port),
        cmocka_unit_test(test_data_credentials_and_db_are_the_data_nodes_only),
        cmocka_unit_test(test_sentinel_credentials_from_the_query),
        cmocka_unit_test(test_bad_sentinel_urls_are_einval_with_a_reason),
        cmocka_unit_test(test_sentinel_url_is_shown_without_passwords),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
