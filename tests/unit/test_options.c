/* SPDX-License-Identifier: MIT */
/* test_options.c — option defaults, and bad options refused with DLOCK_EINVAL before any
 * I/O (the URLs below point nowhere; the calls must fail at once, not after a connect
 * timeout). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "client/client.h"

static void test_defaults_are_the_documented_ones(void **state) {
    (void)state;
    dlock_options o;
    memset(&o, 0x5a, sizeof(o));
    dlock_options_init(&o);
    assert_int_equal(o.size, sizeof(o));
    assert_null(o.url);
    assert_int_equal(o.watchdog_ms, 30000);
    assert_int_equal(o.renew_batch, 100);
    assert_int_equal(o.timeout_ms, 3000);
    assert_int_equal(o.connect_timeout_ms, 10000);
    assert_int_equal(o.retry_attempts, 3);
    assert_int_equal(o.retry_delay_ms, 1000);
    assert_int_equal(o.fair_wait_ms, 5000);
    assert_int_equal(o.max_hold_ms, 0);
    assert_int_equal(o.reply_spin_us, 50);
    assert_null(o.log_cb);
    assert_null(o.log_arg);
}

static void expect_einval(const dlock_options *o, const char *reason_part) {
    dlock_client *c = (dlock_client *)0x1;
    int64_t start = dlock__now_ms();
    assert_int_equal(dlock_client_new(o, &c), DLOCK_EINVAL);
    assert_true(dlock__now_ms() - start < 500);
    assert_ptr_equal(c, (dlock_client *)0x1); /* untouched */
    if (!strstr(dlock_last_error(), reason_part))
        fail_msg("reason \"%s\" lacks \"%s\"", dlock_last_error(), reason_part);
}

static void test_bad_options_are_einval_without_io(void **state) {
    (void)state;
    dlock_options o;
#define BAD(field, value, reason)                                                                  \
    dlock_options_init(&o);                                                                        \
    o.url = "redis://192.0.2.1:1";                                                                 \
    o.field = value;                                                                               \
    expect_einval(&o, reason);
    BAD(watchdog_ms, 0, "watchdog_ms");
    BAD(watchdog_ms, -5, "watchdog_ms");
    BAD(renew_batch, 0, "renew_batch");
    BAD(timeout_ms, 0, "timeout_ms");
    BAD(connect_timeout_ms, -1, "connect_timeout_ms");
    BAD(retry_attempts, -1, "retry_attempts");
    BAD(retry_delay_ms, -1, "retry_delay_ms");
    BAD(retry_delay_ms, 0, "retry_delay_ms"); /* would reconnect in a tight loop */
    BAD(url, "", "url is empty");
    BAD(fair_wait_ms, 0, "fair_wait_ms");
    BAD(reply_spin_us, -1, "reply_spin_us must be from 0 to 1000");
    BAD(reply_spin_us, 1001, "reply_spin_us must be from 0 to 1000");
    BAD(url, "http://x", "scheme");
#undef BAD
    dlock_options_init(&o);
    o.size = 0;
    expect_einval(&o, "dlock_options_init");
}

static void test_bad_url_from_the_environment(void **state) {
    (void)state;
    setenv("DLOCK_URL", "redis://h:99999", 1);
    expect_einval(NULL, "port");
    unsetenv("DLOCK_URL");
}

static void test_null_out_is_einval(void **state) {
    (void)state;
    assert_int_equal(dlock_client_new(NULL, NULL), DLOCK_EINVAL);
    assert_int_equal(dlock_client_free(NULL), DLOCK_OK);
    assert_int_equal(dlock_client_ping(NULL), DLOCK_EINVAL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_are_the_documented_ones),
        cmocka_unit_test(test_bad_options_are_einval_without_io),
        cmocka_unit_test(test_bad_url_from_the_environment),
        cmocka_unit_test(test_null_out_is_einval),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
