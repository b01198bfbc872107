/* SPDX-License-Identifier: MIT */
/* test_url_sync.c — ?sync_replicas=auto|0|N&sync_timeout_ms=MS on every URL form: the
 * defaults (auto, 1000 ms), each value, and DLOCK_EINVAL with a reason for anything else. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "client/client.h"
#include "topology/sentinel.h"

static dlock__endpoint parse_ok(const char *url) {
    dlock__endpoint ep;
    char err[200];
    if (dlock__url_parse(url, &ep, err, sizeof(err)) != DLOCK_OK)
        fail_msg("%s: %s", url, err);
    return ep;
}

static void expect_sync(const char *url, int replicas, int64_t timeout_ms) {
    dlock__endpoint ep = parse_ok(url);
    if (ep.sync_replicas != replicas || ep.sync_timeout_ms != timeout_ms)
        fail_msg("%s: sync_replicas %d, sync_timeout_ms %lld; expected %d, %lld", url,
                 ep.sync_replicas, (long long)ep.sync_timeout_ms, replicas, (long long)timeout_ms);
    dlock__endpoint_free(&ep);
}

static void expect_bad(const char *url, const char *reason_part) {
    dlock__endpoint ep;
    char err[200];
    if (dlock__url_parse(url, &ep, err, sizeof(err)) != DLOCK_EINVAL)
        fail_msg("%s was accepted", url);
    if (!strstr(err, reason_part))
        fail_msg("%s: reason \"%s\" does not mention \"%s\"", url, err, reason_part);
}

static void test_every_form_defaults_to_auto_and_1000_ms(void **state) {
    (void)state;
    expect_sync("redis://h", DLOCK__SYNC_AUTO, 1000);
    expect_sync("rediss://h", DLOCK__SYNC_AUTO, 1000);
    expect_sync("unix:///tmp/s", DLOCK__SYNC_AUTO, 1000);
}

static void test_sync_keys_are_read_on_every_form(void **state) {
    (void)state;
    expect_sync("redis://h?sync_replicas=0", 0, 1000);
    expect_sync("redis://h:7000/2?sync_replicas=2&sync_timeout_ms=250", 2, 250);
    expect_sync("redis://h?sync_replicas=auto&sync_timeout_ms=1", DLOCK__SYNC_AUTO, 1);
    expect_sync("rediss://h?insecure=1&sync_replicas=1", 1, 1000);
    expect_sync("unix:///tmp/s?db=1&sync_timeout_ms=3600000", DLOCK__SYNC_AUTO, 3600000);
    expect_sync("redis://h?sync_replicas=1&sync_replicas=3", 3, 1000); /* the last one */
}

static void test_bad_sync_values_are_einval_with_a_reason(void **state) {
    (void)state;
    expect_bad("redis://h?sync_replicas=", "sync_replicas");
    expect_bad("redis://h?sync_replicas=all", "auto or a number");
    expect_bad("redis://h?sync_replicas=-1", "sync_replicas");
    expect_bad("redis://h?sync_replicas=1001", "sync_replicas");
    expect_bad("redis://h?sync_replicas=AUTO", "sync_replicas");
    expect_bad("redis://h?sync_timeout_ms=0", "sync_timeout_ms"); /* WAIT's 0 waits for ever */
    expect_bad("redis://h?sync_timeout_ms=3600001", "sync_timeout_ms");
    expect_bad("redis://h?sync_timeout_ms=1s", "sync_timeout_ms");
    expect_bad("unix:///tmp/s?sync_timeout_ms=", "sync_timeout_ms");
}

static void test_unknown_keys_stay_einval_and_name_the_sync_keys(void **state) {
    (void)state;
    expect_bad("redis://h?sync=1", "unknown query parameter");
    expect_bad("redis://h?sync=1", "sync_replicas");
    expect_bad("redis://h?db=1", "use /db");
    expect_bad("redis://h?sync_replicas=1&cacert=/ca.pem", "rediss://");
    expect_bad("rediss://h?sync_replicas=1&color=red", "unknown query parameter");
    expect_bad("unix:///tmp/s?sync_replica=1", "unknown query parameter");
}

static void test_a_sentinel_url_gives_its_data_nodes_the_sync_keys(void **state) {
    (void)state;
    dlock__sentinel_url u;
    char err[200];
    const char *url = "redis-sentinel://a:1,b:2/mymaster?sync_replicas=2&sync_timeout_ms=400";
    if (dlock__sentinel_url_parse(url, &u, err, sizeof(err)) != DLOCK_OK)
        fail_msg("%s: %s", url, err);
    assert_int_equal(u.data.sync_replicas, 2);
    assert_int_equal(u.data.sync_timeout_ms, 400);
    dlock__sentinel_url_free(&u);
    assert_int_equal(
        dlock__sentinel_url_parse("redis-sentinel://a/m?sync_replicas=x", &u, err, sizeof(err)),
        DLOCK_EINVAL);
    assert_non_null(strstr(err, "sync_replicas"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_form_defaults_to_auto_and_1000_ms),
        cmocka_unit_test(test_sync_keys_are_read_on_every_form),
        cmocka_unit_test(test_bad_sync_values_are_einval_with_a_reason),
        cmocka_unit_test(test_unknown_keys_stay_einval_and_name_the_sync_keys),
        cmocka_unit_test(test_a_sentinel_url_gives_its_data_nodes_the_sync_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
