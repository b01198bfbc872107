/* SPDX-License-Identifier: MIT */
/* test_wait_deadline.c — a wait is never cut short: dlock_lock_try_acquire(wait_ms) on a lock
 * held elsewhere returns DLOCK_ETIMEDOUT no sooner than wait_ms after it was called, measured
 * with a microsecond clock. The client's own clock counts whole ms; a deadline of "now +
 * wait_ms" on it came up to 1 ms early (a 200 ms wait gave up after 199.7 ms, in about one
 * try in fifteen), so each wait below runs many times. A busy machine only makes a wait
 * longer, so this lower bound holds on any machine; no upper bound is asserted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "dlock.h"
#include "harness.h"
#include "redis_fixture.h"
#include "test_util.h"

#define ROUNDS 25

static void test_a_timed_out_wait_never_returns_before_its_wait_ms(void **state) {
    (void)state;
    test_watchdog_arm(120, __func__);
    redis_fixture *f = start_server();
    dlock_client *holder_c = connect_client(f), *waiter_c = connect_client(f);
    dlock_lock *held = NULL, *wanted = NULL;
    assert_int_equal(dlock_lock_new(holder_c, "deadline", &held), DLOCK_OK);
    assert_int_equal(dlock_lock_new(waiter_c, "deadline", &wanted), DLOCK_OK);
    assert_int_equal(dlock_lock_acquire(held, DLOCK_WATCHDOG), DLOCK_OK);
    static const int64_t waits_ms[] = {1, 3, 7, 20};
    int64_t shortest_over_us = INT64_MAX;
    for (size_t k = 0; k < sizeof(waits_ms) / sizeof(*waits_ms); k++) {
        for (int round = 0; round < ROUNDS; round++) {
            int64_t start_us = test_now_us();
            int rc = dlock_lock_try_acquire(wanted, waits_ms[k], 30000);
            int64_t took_us = test_now_us() - start_us;
            assert_int_equal(rc, DLOCK_ETIMEDOUT);
            if (took_us < waits_ms[k] * 1000)
                fail_msg("a %lld ms wait timed out after %.3f ms", (long long)waits_ms[k],
                         (double)took_us / 1000.0);
            if (took_us - waits_ms[k] * 1000 < shortest_over_us)
                shortest_over_us = took_us - waits_ms[k] * 1000;
        }
    }
    printf("# %d timed-out waits, the closest %.3f ms past its wait_ms\n",
           ROUNDS * (int)(sizeof(waits_ms) / sizeof(*waits_ms)), (double)shortest_over_us / 1000.0);
    assert_int_equal(dlock_lock_release(held), DLOCK_OK);
    dlock_lock_free(wanted);
    dlock_lock_free(held);
    dlock_client_free(waiter_c);
    dlock_client_free(holder_c);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_timed_out_wait_never_returns_before_its_wait_ms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
