/* SPDX-License-Identifier: MIT */
/* test_sentinel_tls.c — rediss-sentinel://: the sentinels and the master are reached over
 * TLS only (every port of the fixture is TLS), the master found and used, a wake-up by
 * message included; and a failover followed over TLS. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "harness.h"
#include "sentinel_fixture.h"

static sentinel_fixture *fx;

static int setup(void **state) {
    (void)state;
    test_watchdog_arm(60, "test_sentinel_tls");
    sentinel_fixture_opts o = {.tls = true, .requirepass = "datapw"};
    return sentinel_fixture_start(&o, &fx);
}

static int teardown(void **state) {
    (void)state;
    sentinel_fixture_stop(fx);
    test_watchdog_disarm();
    return 0;
}

static void test_master_found_and_used_over_tls_and_followed_through_a_failover(void **state) {
    (void)state;
    assert_non_null(strstr(sentinel_fixture_url(fx), "rediss-sentinel://"));
    test_client_cfg cfg = {.url = sentinel_fixture_url(fx), .connect_timeout_ms = 2000};
    dlock_client *c = connect_client_cfg(NULL, cfg), *other = connect_client_cfg(NULL, cfg);

    dlock_latch *waiter, *opener;
    bool set;
    ASSERT_OK(dlock_latch_new(c, "tls-latch", &waiter));
    ASSERT_OK(dlock_latch_new(other, "tls-latch", &opener));
    ASSERT_OK(dlock_latch_try_set_count(opener, 1, &set));
    ASSERT_OK(dlock_latch_count_down(opener));
    ASSERT_OK(dlock_latch_await(waiter, 5000));

    int64_t start = test_now_ms();
    int new_master = sentinel_fixture_failover(fx);
    assert_true(new_master >= 0);
    /* a name never used before, found on the new master: the client moved there (the old
     * master's writes no longer reach it) */
    redis_fixture *node = sentinel_fixture_node(fx, new_master);
    bool moved = false;
    for (int n = 0; !moved && test_now_ms() - start < slack_ms(10000); n++) {
        char name[32];
        snprintf(name, sizeof(name), "tls-after-%d", n);
        dlock_lock *l;
        ASSERT_OK(dlock_lock_new(c, name, &l));
        moved = dlock_lock_try_acquire(l, 0, 30000) == DLOCK_OK &&
                redis_fixture_int(node, "EXISTS %s", name) == 1;
        dlock_lock_free(l);
        if (!moved)
            test_sleep_ms(20);
    }
    assert_true(moved);
    printf("# over TLS: locked on the new master %lld ms after SENTINEL FAILOVER began\n",
           (long long)(test_now_ms() - start));
    dlock_latch_free(opener);
    dlock_latch_free(waiter);
    dlock_client_free(other);
    dlock_client_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_master_found_and_used_over_tls_and_followed_through_a_failover, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
