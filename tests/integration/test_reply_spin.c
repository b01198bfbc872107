/* SPDX-License-Identifier: MIT */
/* test_reply_spin.c — the lone caller's spin (dlock_options.reply_spin_us) against a real
 * redis-server: a call whose reply is late (the server holds every command: CLIENT PAUSE)
 * spins once, misses, sleeps and still gets its reply; the spin stays within its budget;
 * a budget of 0 never spins; dlock_stats and the Prometheus text count the spins. Whether a
 * spin catches its reply depends on the machine's speed, which no test may assume:
 * dlock-bench reports the hits (docs/benchmarks.md). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dlock.h"
#include "engine/engine.h"
#include "harness.h"
#include "redis_fixture.h"
#include "spin_skip.h"
#include "stats_helpers.h"
#include "test_util.h"

#define PAUSE_MS 300 /* far longer than a busy machine keeps the caller from its first poll */

static dlock_client *client_with_spin(redis_fixture *f, int64_t spin_us) {
    dlock_options o;
    dlock_options_init(&o);
    o.url = redis_fixture_unix_url(f);
    o.reply_spin_us = spin_us;
    dlock_client *c = NULL;
    assert_int_equal(dlock_client_new(&o, &c), DLOCK_OK);
    for (int i = 0; i < 20; i++) /* connected, scripts loaded: the next call goes alone */
        assert_int_equal(dlock_client_ping(c), DLOCK_OK);
    /* those waits may have missed on a busy machine and left the spin backing off: the test
     * starts from a fresh policy (only this thread, the lone caller, touches it) */
    dlock__spin_init(&DLOCK__ENGINE(c)->spin, spin_us);
    return c;
}

/* One ping the server answers only after PAUSE_MS: the reply is not there when the wait
 * starts, and comes long after any budget. */
static void ping_late(redis_fixture *f, dlock_client *c) {
    redisReply *r = redis_fixture_cmd(f, "CLIENT PAUSE %d", PAUSE_MS);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    int64_t start = test_now_ms();
    assert_int_equal(dlock_client_ping(c), DLOCK_OK);
    /* the pause held it (else the wait was not for a late reply) */
    assert_true(test_now_ms() - start >= PAUSE_MS - 5);
}

static void test_a_late_reply_is_one_spin_a_miss_within_the_budget_and_still_read(void **state) {
    (void)state;
    skip_unless_it_may_spin();
    test_watchdog_arm(60, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = client_with_spin(f, 1000);
    dlock_stats before = stats_of(c);
    ping_late(f, c);
    dlock_stats after = stats_of(c);
    assert_int_equal(after.reply_spins, before.reply_spins + 1);
    assert_int_equal(after.reply_spin_hits, before.reply_spin_hits);
    /* it spun at most its budget and one turn (a turn that gave the CPU away ends it) */
    assert_true(after.reply_spin_us - before.reply_spin_us <= 1000 + 10);
    /* the miss makes the next wait sleep at once: another late reply, no spin */
    ping_late(f, c);
    assert_int_equal(stats_of(c).reply_spins, after.reply_spins);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_a_budget_of_0_never_spins(void **state) {
    (void)state;
    test_watchdog_arm(60, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = client_with_spin(f, 0);
    for (int i = 0; i < 3; i++)
        ping_late(f, c);
    dlock_lock *l = NULL;
    assert_int_equal(dlock_lock_new(c, "spin-none", &l), DLOCK_OK);
    for (int i = 0; i < 100; i++) {
        assert_int_equal(dlock_lock_acquire(l, 30000), DLOCK_OK);
        assert_int_equal(dlock_lock_release(l), DLOCK_OK);
    }
    dlock_stats s = stats_of(c);
    assert_int_equal(s.reply_spins, 0);
    assert_int_equal(s.reply_spin_hits, 0);
    assert_int_equal(s.reply_spin_us, 0);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_the_spins_are_in_the_prometheus_text(void **state) {
    (void)state;
    skip_unless_it_may_spin();
    test_watchdog_arm(60, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = client_with_spin(f, 1000);
    ping_late(f, c);
    dlock_stats s = stats_of(c);
    assert_true(s.reply_spins >= 1);
    char text[16384];
    size_t len = 0;
    assert_int_equal(dlock_client_stats_prometheus(c, NULL, 0, text, sizeof(text), &len), DLOCK_OK);
    char want[128];
    snprintf(want, sizeof(want), "\ndlock_reply_spins_total %llu\n",
             (unsigned long long)stats_of(c).reply_spins);
    if (!strstr(text, want))
        fail_msg("no \"%s\" in:\n%s", want + 1, text);
    assert_non_null(strstr(text, "# TYPE dlock_reply_spin_hits_total counter\n"));
    assert_non_null(strstr(text, "# TYPE dlock_reply_spin_seconds_total counter\n"));
    dlock_client_free(c);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_late_reply_is_one_spin_a_miss_within_the_budget_and_still_read),
        cmocka_unit_test(test_a_budget_of_0_never_spins),
        cmocka_unit_test(test_the_spins_are_in_the_prometheus_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
