/* SPDX-License-Identifier: MIT */
/* test_url_schemes.c — the URL schemes a client takes, and what a mistyped one is told.
 *
 * A URL whose scheme is none of the seven is refused (DLOCK_EINVAL, no I/O) with a message
 * that names every scheme there is, spelled out here on their own so that a scheme added to
 * the router but not to url.c's list (or the other way round) fails one of the two tests:
 * each scheme of the list is taken by dlock_client_new (a bad port in it is refused for the
 * port, not for the scheme). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "client/client.h"

static const char *const every_scheme[] = {
    "redis://",           "rediss://",        "unix://",           "redis-sentinel://",
    "rediss-sentinel://", "redis-cluster://", "rediss-cluster://",
};
#define SCHEMES (sizeof(every_scheme) / sizeof(every_scheme[0]))

/* dlock_client_new on url: DLOCK_EINVAL, and the message it left. */
static const char *refused(const char *url) {
    dlock_options o;
    dlock_options_init(&o);
    o.url = url;
    dlock_client *c = NULL;
    int rc = dlock_client_new(&o, &c);
    if (rc != DLOCK_EINVAL)
        fail_msg("%s: %s, not DLOCK_EINVAL", url, dlock_err_name(rc));
    assert_null(c);
    return dlock_last_error();
}

static void test_a_mistyped_scheme_is_told_every_scheme(void **state) {
    (void)state;
    const char *const mistyped[] = {"redis-clustr://127.0.0.1:7000",
                                    "http://h",
                                    "rediss-sentinal://h:26379/m",
                                    "localhost:6379",
                                    "redis:/h",
                                    "REDIS://h"};
    for (size_t i = 0; i < sizeof(mistyped) / sizeof(mistyped[0]); i++) {
        const char *why = refused(mistyped[i]);
        printf("# %s -> %s\n", mistyped[i], why);
        for (size_t s = 0; s < SCHEMES; s++)
            if (!strstr(why, every_scheme[s]))
                fail_msg("%s: \"%s\" does not name %s", mistyped[i], why, every_scheme[s]);
    }
    /* it quotes the scheme it was given, and only that (a password may follow "://") */
    assert_non_null(strstr(refused("redis-clustr://u:s3cret@h:1"), "\"redis-clustr://\""));
    assert_null(strstr(refused("redis-clustr://u:s3cret@h:1"), "s3cret"));
    assert_null(strstr(refused("u:s3cret@h://x"), "s3cret"));
    assert_non_null(strstr(refused("localhost:6379"), "no scheme"));
}

static void test_every_scheme_listed_is_taken(void **state) {
    (void)state;
    size_t n = 0;
    const char *const *listed = dlock__url_schemes(&n);
    assert_int_equal(n, SCHEMES);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(listed[i], every_scheme[i]);
        /* a URL of this scheme, wrong only in its port (a unix:// one: a relative path) */
        char url[128];
        bool sentinel = strstr(listed[i], "sentinel") != NULL;
        if (strcmp(listed[i], "unix://") == 0)
            snprintf(url, sizeof(url), "unix://relative.sock");
        else
            snprintf(url, sizeof(url), "%s127.0.0.1:99999%s", listed[i], sentinel ? "/m" : "");
        const char *why = refused(url);
        printf("# %s -> %s\n", url, why);
        if (strstr(why, "scheme"))
            fail_msg("%s: refused for its scheme: %s", url, why);
        assert_non_null(strstr(why, strcmp(listed[i], "unix://") == 0 ? "absolute" : "port"));
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_mistyped_scheme_is_told_every_scheme),
        cmocka_unit_test(test_every_scheme_listed_is_taken),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
