/* SPDX-License-Identifier: MIT */
/* test_url_mask.c — dlock__url_masked, the one function through which the library and the
 * tool show a URL: no password survives it, well-formed or not, and everything else is
 * left as it was so the URL still says where it points. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "client/client.h"

static void expect_masked(const char *url, const char *want) {
    char buf[256];
    const char *got = dlock__url_masked(url, buf, sizeof(buf));
    if (got != buf || strcmp(got, want) != 0)
        fail_msg("masked '%s' = '%s', expected '%s'", url, got, want);
}

static void test_password_in_userinfo_is_masked_and_the_user_kept(void **state) {
    (void)state;
    expect_masked("redis://u:s3cret@127.0.0.1:1", "redis://u:***@127.0.0.1:1");
    expect_masked("redis://:s3cret@host/2", "redis://:***@host/2");
    expect_masked("redis://u:s3cret@[::1]:6380/0", "redis://u:***@[::1]:6380/0");
    /* a raw '@', '/' or '?' in the password: userinfo runs to the last '@' */
    expect_masked("redis://u:p@ss/w?rd@host:6379", "redis://u:***@host:6379");
    expect_masked("redis://u:p%40ss@host", "redis://u:***@host");
}

static void test_password_query_value_is_masked(void **state) {
    (void)state;
    expect_masked("unix:///tmp/r.sock?user=u&password=s3cret",
                  "unix:///tmp/r.sock?user=u&password=***");
    expect_masked("unix:///tmp/r.sock?password=s3cret&db=2",
                  "unix:///tmp/r.sock?password=***&db=2");
    expect_masked("unix:///tmp/r.sock?password=a&password=b",
                  "unix:///tmp/r.sock?password=***&password=***");
    expect_masked("unix:///tmp/r.sock?password=", "unix:///tmp/r.sock?password=***");
}

static void test_url_without_password_is_unchanged(void **state) {
    (void)state;
    expect_masked("redis://127.0.0.1:6379/3", "redis://127.0.0.1:6379/3");
    expect_masked("unix:///tmp/r.sock?user=u&db=1", "unix:///tmp/r.sock?user=u&db=1");
    expect_masked("unix:///tmp/a@b.sock?db=1", "unix:///tmp/a@b.sock?db=1"); /* a path's '@' */
    expect_masked("unix:///tmp/r.sock?mypassword=x", "unix:///tmp/r.sock?mypassword=x");
    expect_masked("", "");
}

/* Some clients read redis://secret@host as a password: without a ':' it is masked whole. */
static void test_userinfo_without_colon_is_masked_whole(void **state) {
    (void)state;
    expect_masked("redis://s3cret@host:6379", "redis://***@host:6379");
}

static void test_malformed_urls_are_masked_too(void **state) {
    (void)state;
    expect_masked("redis://u:s3cret@host:notaport", "redis://u:***@host:notaport");
    expect_masked("redis://u:s3cret@host?password=x", "redis://u:***@host?password=***");
    expect_masked("rediss://u:s3cret@host", "rediss://u:***@host");
    expect_masked("u:s3cret@host", "u:***@host"); /* no scheme */
    expect_masked("http://host/?password=s3cret", "http://host/?password=***");
}

static void test_truncation_never_shows_a_password_and_null_is_empty(void **state) {
    (void)state;
    char small[16];
    dlock__url_masked("redis://user:s3cretpassword@host", small, sizeof(small));
    assert_string_equal(small, "redis://user:**");
    char buf[8] = "junk";
    assert_string_equal(dlock__url_masked(NULL, buf, sizeof(buf)), "");
    char one[1];
    assert_string_equal(dlock__url_masked("redis://u:p@h", one, sizeof(one)), "");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_password_in_userinfo_is_masked_and_the_user_kept),
        cmocka_unit_test(test_password_query_value_is_masked),
        cmocka_unit_test(test_url_without_password_is_unchanged),
        cmocka_unit_test(test_userinfo_without_colon_is_masked_whole),
        cmocka_unit_test(test_malformed_urls_are_masked_too),
        cmocka_unit_test(test_truncation_never_shows_a_password_and_null_is_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
